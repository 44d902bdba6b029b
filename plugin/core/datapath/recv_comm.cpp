// The receiver's data path; see recv_comm.h for the protocol.
#include "core/datapath/recv_comm.h"

#include <fmt/format.h>

#include "core/datapath/size_split.h"
#include "core/datapath/wr_id.h"
#include "util/log.h"
#include "verbs/error.h"

namespace roce {

RecvComm::RecvComm(std::shared_ptr<DeviceRuntime> device, RecvCommSetup setup)
    : ConnectedComm(CommKind::Recv, std::move(device),
                    std::move(static_cast<ConnectionSetup&>(setup))),
      cts_staging_(static_cast<CtsEntry*>(setup.cts_staging.data())),
      cts_staging_lkey_(setup.cts_staging.lkey()),
      sizes_area_(static_cast<const int32_t*>(setup.sizes_area.data())),
      remote_ring_addr_(setup.remote_ring_addr),
      remote_ring_rkey_(setup.remote_ring_rkey),
      flush_addr_(setup.flush_word.addr()),
      max_inline_(qps_.front()->capabilities().max_inline_data),
      cts_staging_buffer_(std::move(setup.cts_staging)),
      sizes_area_buffer_(std::move(setup.sizes_area)),
      flush_word_(std::move(setup.flush_word)),
      flush_qp_(std::move(setup.flush_qp)),
      more_flush_qps_(std::move(setup.more_flush_qps)),
      fifo_traffic_class_(setup.fifo_traffic_class) {
  // CTS writes go on QP 0; one send-queue entry stays free for the drain marker at close.
  cts_credits_ = SendQueueCredits(qps_.front()->capabilities().max_send_wr - 1, kCtsSignalInterval);
  if (flush_qp_ != nullptr) {
    flush_qp_ptr_ = flush_qp_.get();
    for (int m = 0; m < member_count_; ++m) {
      const auto i = static_cast<size_t>(m);
      verbs::QueuePair* qp = m == 0 ? flush_qp_.get() : more_flush_qps_[i - 1].get();
      flush_qp_ptrs_[i] = qp;
      flush_credits_[i] = SendQueueCredits(qp->capabilities().max_send_wr - 1, 1);
      flush_lkeys_[i] = flush_word_.lkey(i);
    }
  }
  for (uint16_t i = 0; i < requests_.capacity(); ++i) {
    requests_[i].kind = RequestKind::Recv;
    requests_[i].index = i;
    requests_[i].comm = this;
  }
  for (uint16_t i = 0; i < flushes_.capacity(); ++i) {
    flushes_[i].kind = RequestKind::Flush;
    flushes_[i].index = i;
    flushes_[i].comm = this;
  }
  // Fields of the preallocated work requests that never change.
  for (size_t i = 0; i < repost_wrs_.size(); ++i) {
    repost_wrs_[i].sg_list = nullptr;
    repost_wrs_[i].num_sge = 0;
    repost_wrs_[i].next = i + 1 < repost_wrs_.size() ? &repost_wrs_[i + 1] : nullptr;
  }
  cts_wr_.opcode = IBV_WR_RDMA_WRITE;
  cts_wr_.sg_list = &cts_sge_;
  cts_wr_.num_sge = 1;
  cts_wr_.wr.rdma.rkey = remote_ring_rkey_;
  cts_sge_.lkey = cts_staging_lkey_;
  flush_wr_.opcode = IBV_WR_RDMA_READ;
  flush_wr_.sg_list = &flush_sge_;
  flush_wr_.num_sge = 1;
  flush_wr_.send_flags = IBV_SEND_SIGNALED;
  flush_sge_.addr = flush_addr_;
  flush_sge_.length = 1;

  // Each data QP carries every message (split), every member_count-th one (split on a virtual
  // NIC: its member's turn) or every nqps-th one, from sequence 1 on; its receives are posted
  // before any irecv, so the sender's first immediate finds one.
  if (split_data_) {
    recv_seq_step_ = static_cast<uint64_t>(lane_count_);
  } else {
    recv_seq_step_ = nqps_ <= 1 ? 1 : static_cast<uint64_t>(nqps_);
  }
  const auto nqps = static_cast<uint8_t>(nqps_);  // at most kMaxQpsPerConnection
  for (uint8_t q = 0; q < nqps; ++q) {
    next_recv_seq_[q] = split_data_ ? first_message_of_qp(member_of_qp(q), member_count_)
                                    : first_message_of_qp(q, nqps_);
    for (uint32_t posted = 0; posted < kPrePostedRecvs; posted += kRecvRepostBatch) {
      if (int rc = post_receive_batch(q); rc != 0) {
        throw verbs::VerbsError(
            fmt::format("ibv_post_recv of {} receives on qp 0x{:x} failed: {}", kRecvRepostBatch,
                        qp_ptrs_[q]->qp_num(), verbs::errno_text(rc)),
            verbs::verbs_errno(rc));
      }
    }
  }
}

RecvComm::~RecvComm() {
  // The QPs go first, before the telemetry's close-time summary reads the port counters, so
  // that what the NIC counted for them is in (vroce publishes its counters as a QP goes).
  more_flush_qps_.clear();
  flush_qp_.reset();
  qps_.clear();
}

template <typename Size>
ncclResult_t RecvComm::irecv(int n, void** data, const Size* sizes, const int* tags,
                             void* const* mhandles, void* const* phandles,
                             void** request) noexcept {
  if (failed()) [[unlikely]] {
    return failure();
  }
  if (staging_unchecked_.load(std::memory_order_relaxed)) [[unlikely]] {
    if (const ncclResult_t r =
            check_staging(reinterpret_cast<uintptr_t>(data[0]), static_cast<size_t>(sizes[0]));
        r != ncclSuccess) {
      return r;
    }
  }
  if (!cts_credits_.can_post(1)) [[unlikely]] {
    if (ncclResult_t r = progress(); r != ncclSuccess) {
      return r;
    }
    if (!cts_credits_.can_post(1)) {
      // NCCL retries. A recovery epoch holds every irecv this way: its health check steps it.
      return check_health();
    }
  }
  const uint16_t index = requests_.take();
  if (index == requests_.kNoSlot) [[unlikely]] {
    return ncclSuccess;  // kMaxRequests receives in flight: NCCL retries later
  }
  RecvRequest& r = requests_[index];
  // The member of a virtual NIC that will carry this message, whose registration's rkey the
  // sender must write with (0 for a port).
  const uint8_t member = member_count_ == 1 ? 0 : member_of_message(next_seq_);

  // One pass over the buffers: each is checked, staged as its CTS entry and remembered as posted.
  // Nothing is posted before every buffer has passed, so a bad one only gives the slot back.
  CtsEntry* staged = cts_staging_ + size_t{index} * kMaxRecvs;
  const auto stage = [&](int i) noexcept -> bool {
    const auto addr = reinterpret_cast<uintptr_t>(data[i]);
    const auto size = static_cast<uint32_t>(sizes[i]);
    uint32_t rkey = 0;
    if (size > 0) {
      const auto* mh = static_cast<const MrHandle*>(mhandles[i]);
      if (!mh->valid() || mh->device_id != device_id_ || !mh->covers(addr, size)) [[unlikely]] {
        return false;
      }
      rkey = mh->rkeys[member];
      r.mhs[static_cast<size_t>(i)] = mh;
    }
    fill_cts_entry(staged[i], CtsBuffer{addr, size, rkey, tags[i]}, next_seq_, index,
                   static_cast<uint8_t>(n));
    r.posted[static_cast<size_t>(i)] = size;
    return true;
  };
  // A receive of one buffer (NCCL's common case) without the loop, which costs it registers.
  int refused = -1;
  if (n == 1) {
    refused = stage(0) ? -1 : 0;
  } else {
    for (int i = 0; i < n && refused < 0; ++i) {
      refused = stage(i) ? -1 : i;
    }
  }
  if (refused >= 0) [[unlikely]] {
    requests_.give_back(index);
    return uncovered_buffer(refused, reinterpret_cast<uintptr_t>(data[refused]),
                            static_cast<uint32_t>(sizes[refused]));
  }

  // The receive that the sender's immediate consumes is already posted (kPrePostedRecvs per QP):
  // on every QP when the sender splits messages, else on the one QP that carries this sequence
  // number's message. Its completion finds this request by the sequence.
  request_of_seq_[next_seq_ & (kCtsRingSlots - 1)] = index;
  r.seq = next_seq_;

  const size_t bytes = size_t(n) * sizeof(CtsEntry);
  cts_sge_.addr = reinterpret_cast<uintptr_t>(staged);
  cts_sge_.length = static_cast<uint32_t>(bytes);
  cts_wr_.wr.rdma.remote_addr = remote_ring_addr_ + cts_slot_offset(next_seq_);
  const bool signal = cts_credits_.should_signal();
  const uint32_t pos = cts_credits_.post();
  cts_wr_.wr_id = pack_wr_id(WrKind::CtsWrite, 0, index, pos);
  cts_wr_.send_flags =
      (bytes <= max_inline_ ? IBV_SEND_INLINE : 0) | (signal ? IBV_SEND_SIGNALED : 0);
  if (signal) {
    cts_credits_.signaled_at(pos);
  }
  ibv_send_wr* bad = nullptr;
  if (int rc = qp_ptrs_[0]->post_send(&cts_wr_, &bad); rc != 0) [[unlikely]] {
    return fail(ncclSystemError, "ibv_post_send (clear-to-send) on qp 0x{:x} failed: {}; to {}",
                qp_ptrs_[0]->qp_num(), verbs::errno_text(rc), peer_);
  }

  r.state = RequestState::Pending;
  r.count = static_cast<uint8_t>(n);
  r.remaining_qps = static_cast<uint8_t>(split_data_ ? qps_per_member_ : 1);
  r.posted_ticks = telemetry::now_ticks();
  // received[] is written by retire_receive for every buffer before the request is Done.
  // r.profiled is false here: it is set only below, and stop_events() clears it.
  if (phandles != nullptr && profiling_) [[unlikely]] {
    r.profiled = true;
    // One QP event per buffer, for the receive on the message's last QP (net_ib's shape).
    const int last_qp =
        split_data_ ? (member + 1) * qps_per_member_ - 1 : qp_of_message(next_seq_, nqps_);
    const uint32_t qpn = qp_ptrs_[static_cast<size_t>(last_qp)]->qp_num();
    const uint64_t wr_id = pack_wr_id(WrKind::Recv, static_cast<uint8_t>(last_qp), index);
    for (int i = 0; i < n; ++i) {
      auto& event = r.events[static_cast<size_t>(i)];
      event.phandle = phandles[i];
      event.start(device().index(), wr_id, 0, qpn, 0);
    }
  }
  ++next_seq_;
  *request = static_cast<RequestHeader*>(&r);
  return ncclSuccess;
}

template ncclResult_t RecvComm::irecv(int, void**, const int*, const int*, void* const*,
                                      void* const*, void**) noexcept;
template ncclResult_t RecvComm::irecv(int, void**, const size_t*, const int*, void* const*,
                                      void* const*, void**) noexcept;

void RecvComm::note_registration(bool device_memory, uintptr_t addr, size_t size) {
  const std::lock_guard lock(staging_mutex_);
  if (staging_unchecked_.load(std::memory_order_relaxed)) {
    staging_.note(device_memory, addr, size);
  }
}

ncclResult_t RecvComm::check_staging(uintptr_t addr, size_t size) noexcept {
  const std::lock_guard lock(staging_mutex_);
  staging_unchecked_.store(false, std::memory_order_relaxed);
  try {
    const StagingDevice facts{device().name(), device().info().pci_path,
                              device().gdr().ptr_support()};
    if (std::optional<std::string> error = check_first_receive(facts, staging_, addr, size)) {
      return fail(ncclSystemError, "{}", *error);
    }
  } catch (const std::exception& e) {
    ROCE_WARN(NCCL_NET, "dev {}: the GPUDirect downgrade check could not run: {}", device().name(),
              e.what());
  }
  return ncclSuccess;
}

ncclResult_t RecvComm::iflush(int n, void* const* data, const int* sizes, void* const* mhandles,
                              void** request) noexcept {
  if (failed()) [[unlikely]] {
    return failure();
  }
  if (flush_qp_ptr_ == nullptr) {
    return ncclSuccess;  // GPUDirect not in use (or NCCL_GDR_FLUSH_DISABLE): nothing to flush
  }
  // The last non-empty GPU buffer: reading it back orders every earlier NIC write before it.
  int last = -1;
  for (int i = n - 1; i >= 0; --i) {
    const auto* mh = static_cast<const MrHandle*>(mhandles[i]);
    if (sizes[i] > 0 && mh != nullptr && mh->valid() && mh->gpu_memory()) {
      last = i;
      break;
    }
  }
  if (last < 0) {
    return ncclSuccess;
  }
  // A NULL request would tell NCCL the flush is done and let the GPU read data the NIC may not
  // have written yet, so running out of flush slots or send-queue entries is an error, never a
  // skipped flush. (NCCL keeps far fewer flushes in flight; this is a caller that never tests.)
  // On a virtual NIC every member's NIC wrote messages of this comm, so each member flushes.
  // A member a recovery epoch left out carries no message, and its port may be down.
  const uint8_t lanes = member_count_ == 1 ? uint8_t{1} : lanes_mask();
  for (int m = 0; m < member_count_; ++m) {
    SendQueueCredits& credits = flush_credits_[static_cast<size_t>(m)];
    if (((lanes >> m) & 1U) == 0) {
      continue;
    }
    if (!credits.can_post(1)) [[unlikely]] {
      if (ncclResult_t r = progress(); r != ncclSuccess) {
        return r;
      }
      if (!credits.can_post(1)) {
        return flush_exhausted("send-queue entries of the flush qp", credits.depth());
      }
    }
  }
  const uint16_t index = flushes_.take();
  if (index == flushes_.kNoSlot) [[unlikely]] {
    return flush_exhausted("flush requests", kMaxRequests);
  }
  FlushRequest& f = flushes_[index];
  f.remaining = static_cast<uint8_t>(member_count_ == 1 ? 1 : __builtin_popcount(lanes));
  const auto* mh = static_cast<const MrHandle*>(mhandles[last]);
  flush_wr_.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(data[last]);
  bool posted_any = false;
  for (int m = 0; m < member_count_; ++m) {
    const auto i = static_cast<size_t>(m);
    if (((lanes >> m) & 1U) == 0) {
      continue;
    }
    flush_wr_.wr.rdma.rkey = mh->rkeys[i];
    flush_sge_.addr = flush_addr_ + i * kFlushWordStride;
    flush_sge_.lkey = flush_lkeys_[i];
    const uint32_t pos = flush_credits_[i].post();
    flush_credits_[i].signaled_at(pos);
    flush_wr_.wr_id = pack_wr_id(WrKind::Flush, static_cast<uint8_t>(m), index, pos);
    ibv_send_wr* bad = nullptr;
    if (int rc = flush_qp_ptrs_[i]->post_send(&flush_wr_, &bad); rc != 0) [[unlikely]] {
      if (!posted_any) {
        flushes_.give_back(index);  // nothing of it posted
      }
      return fail(ncclSystemError, "ibv_post_send (flush read) on qp 0x{:x} failed: {}",
                  flush_qp_ptrs_[i]->qp_num(), verbs::errno_text(rc));
    }
    posted_any = true;
  }
  f.state = RequestState::Pending;
  *request = static_cast<RequestHeader*>(&f);
  return ncclSuccess;
}

ncclResult_t RecvComm::uncovered_buffer(int i, uintptr_t addr, uint32_t size) const noexcept {
  ROCE_WARN(NCCL_NET,
            "recv comm on {}: irecv buffer {} [0x{:x}, +{}) is not covered by its memory "
            "handle; register the buffer on this comm's device",
            device().name(), i, addr, size);
  return ncclInvalidArgument;
}

ncclResult_t RecvComm::flush_exhausted(const char* what, uint32_t limit) const noexcept {
  ROCE_WARN(NCCL_NET,
            "iflush on recv comm from {}: all {} {} are in use by flushes not yet completed; "
            "test() the earlier flush requests before posting more (the flush is refused, not "
            "skipped: skipping it could let the GPU read data not yet written)",
            peer_, limit, what);
  return ncclInternalError;
}

template <bool kCommon>
ncclResult_t RecvComm::retire_receive(const ibv_wc& wc, uint8_t q, uint16_t index) noexcept {
  const uint32_t imm = wc.imm_data;
  // The QP's receives complete in the order of the messages it carries: the next one is due.
  next_recv_seq_[q] += recv_seq_step_;
  const uint32_t handled = ++recvs_to_repost_[q];
  if (!kCommon && handled == kRecvRepostBatch) [[unlikely]] {
    if (ncclResult_t res = repost_receives(q); res != ncclSuccess) {
      return res;
    }
  }
  RecvRequest& r = requests_[index];
  const auto done = [&](uint64_t bytes) {
    r.state = RequestState::Done;
    if constexpr (!kCommon) {
      if (r.profiled) [[unlikely]] {
        stop_events(r);
      }
      count_done(r, bytes);
    }
  };
  if (kCommon || r.count == 1) [[likely]] {
    // A refusal (kRefusedSendImm) is larger than any size a receive can hold: it is found here.
    if (!kCommon && imm > r.posted[0]) [[unlikely]] {
      return (imm & kRefusedSendImm) != 0 ? fail_refused_send(imm & kRefusedSendSizeMask, r)
                                          : fail_oversized(imm, r.posted[0]);
    }
    r.received[0] = static_cast<int32_t>(imm);
    if constexpr (kCommon) {
      r.remaining_qps = 0;  // its one QP
    } else if (--r.remaining_qps != 0) {
      return ncclSuccess;  // the immediates of the message's other QPs are still to come
    }
    done(imm);
    return ncclSuccess;
  }
  if ((imm & kRefusedSendImm) != 0) [[unlikely]] {
    return fail_refused_send(imm & kRefusedSendSizeMask, r);
  }
  if (--r.remaining_qps > 0) {
    return ncclSuccess;
  }
  // Written by the sender with the immediate of the message's first QP, before it arrived.
  const int32_t* sizes = sizes_area_ + size_t{index} * kMaxRecvs;
  uint64_t bytes = 0;
  for (uint8_t i = 0; i < r.count; ++i) {
    const int32_t size = sizes[i];
    if (size < 0 || static_cast<uint32_t>(size) > r.posted[i]) [[unlikely]] {
      return fail_oversized_member(size, i, r.posted[i]);
    }
    r.received[i] = size;
    bytes += static_cast<uint32_t>(size);
  }
  done(bytes);
  return ncclSuccess;
}

void RecvComm::stop_events(RecvRequest& r) noexcept {
  for (int i = 0; i < r.count; ++i) {
    r.events[static_cast<size_t>(i)].stop();
  }
  r.profiled = false;
}

int RecvComm::post_receive_batch(uint8_t q) noexcept {
  const uint64_t wr_id = pack_wr_id(WrKind::Recv, q, 0);
  for (auto& wr : repost_wrs_) {
    wr.wr_id = wr_id;
  }
  ibv_recv_wr* bad = nullptr;
  return qp_ptrs_[q]->post_recv(repost_wrs_.data(), &bad);
}

ncclResult_t RecvComm::repost_receives(uint8_t q) noexcept {
  recvs_to_repost_[q] = 0;
  if (int rc = post_receive_batch(q); rc != 0) {
    return fail(ncclSystemError, "ibv_post_recv of {} receives on qp 0x{:x} failed: {}; from {}",
                kRecvRepostBatch, qp_ptrs_[q]->qp_num(), verbs::errno_text(rc), peer_);
  }
  return ncclSuccess;
}

ncclResult_t RecvComm::fail_unmatched_receive(const ibv_wc& wc, uint64_t seq) noexcept {
  return fail(ncclRemoteError,
              "{} wrote message {} into qp 0x{:x} before this side posted its irecv (no "
              "clear-to-send went out for it); the peer is not a compatible RoCE plugin",
              peer_, seq, wc.qp_num);
}

ncclResult_t RecvComm::fail_oversized(uint32_t size, uint32_t posted) noexcept {
  return fail(ncclRemoteError,
              "{} reported {} bytes written into a {}-byte receive; the peer is not a "
              "compatible RoCE plugin",
              peer_, size, posted);
}

ncclResult_t RecvComm::fail_refused_send(uint32_t size, const RecvRequest& r) noexcept {
  if (r.count == 1) {
    return fail(ncclInvalidUsage,
                "{} refused an isend of {} bytes that matched this irecv of {} bytes; a send may "
                "not be larger than its receive: the ranks posted mismatched sizes",
                peer_, size, r.posted[0]);
  }
  std::string buffers;
  for (int i = 0; i < r.count; ++i) {
    buffers += fmt::format("{}{}", i == 0 ? "" : ", ", r.posted[static_cast<size_t>(i)]);
  }
  return fail(ncclInvalidUsage,
              "{} refused an isend of {} bytes that matched a smaller buffer of this "
              "multi-receive (buffers of {} bytes); a send may not be larger than its receive: "
              "the ranks posted mismatched sizes",
              peer_, size, buffers);
}

ncclResult_t RecvComm::fail_oversized_member(int32_t size, int i, uint32_t posted) noexcept {
  return fail(ncclRemoteError,
              "{} reported {} bytes for buffer {} of a multi-receive whose buffer holds {}", peer_,
              size, i, posted);
}

void RecvComm::check_stall() noexcept {
  const RecvRequest* oldest = oldest_pending(requests_);
  if (oldest == nullptr) {
    return;
  }
  if (const auto ms = telemetry_.stall().warn_after(oldest->posted_ticks, telemetry::now_ticks())) {
    telemetry_.warn_stall(
        "irecv is waiting for data", *ms,
        "its clear-to-send went out, but the peer has not sent this message: the peer rank is "
        "not calling isend (stalled or waiting for something else), or its data is lost on "
        "the path. Look at the peer rank's own stall warnings first");
  }
}

ncclResult_t RecvComm::on_completions(int got) noexcept {
  for (int k = 0; k < got; ++k) {
    const ibv_wc& wc = wcs_[static_cast<size_t>(k)];
    const uint8_t q = wr_id_qp(wc.wr_id);
    if (wc.status != IBV_WC_SUCCESS || !wr_id_is(wc.wr_id, WrKind::Recv) || q >= nqps_ ||
        recvs_to_repost_[q] + 1 == kRecvRepostBatch) [[unlikely]] {
      return handle_completions(k, got);
    }
    const uint16_t index = request_due(q);
    if (index == kNoRequest) [[unlikely]] {
      return handle_completions(k, got);  // reports it
    }
    // Only a receive of one buffer, on one QP and unprofiled, with its size in range (a refusal
    // is not), is taken here.
    const RecvRequest& r = requests_[index];
    const uint32_t size = wc.imm_data;
    if (r.count != 1 || r.remaining_qps != 1 || size > r.posted[0] || r.profiled) [[unlikely]] {
      return handle_completions(k, got);
    }
    if (ncclResult_t res = retire_receive<true>(wc, q, index); res != ncclSuccess) [[unlikely]] {
      return res;  // not reached: the checks above rule out each of its failures
    }
    // Its telemetry here, so that a sampled one leaves the loop by a tail call.
    if (!telemetry_.next_completion_quiet()) [[unlikely]] {
      return on_sampled_completion(r, k, got);
    }
    telemetry_.completed_quietly(size);
  }
  if (got < 0) [[unlikely]] {
    return fail_poll(got);
  }
  return ncclSuccess;
}

ncclResult_t RecvComm::on_sampled_completion(const RecvRequest& r, int k, int got) noexcept {
  count_done(r, static_cast<uint32_t>(r.received[0]));
  return k + 1 < got ? handle_completions(k + 1, got) : ncclSuccess;
}

ncclResult_t RecvComm::handle_completion(const ibv_wc& wc) noexcept {
  // Most completions are the data's immediates: those first, without unpacking the rest. A QP's
  // receives complete in the order of the messages it carries, so the next one it was due
  // names the request.
  if (wr_id_is(wc.wr_id, WrKind::Recv)) [[likely]] {
    const uint8_t q = wr_id_qp(wc.wr_id);
    if (q >= nqps_) [[unlikely]] {
      return fail_unexpected_wr_id(wc);
    }
    if (wc.imm_data == kAlreadyCompleteImm) [[unlikely]] {
      return skip_marker(q);
    }
    const uint16_t index = request_due(q);
    if (index == kNoRequest) [[unlikely]] {
      return fail_unmatched_receive(wc, next_recv_seq_[q]);
    }
    return retire_receive<false>(wc, q, index);
  }
  const WrId id = unpack_wr_id(wc.wr_id);
  switch (id.kind) {
    case WrKind::CtsWrite:
      cts_credits_.retire(id.sq_pos);
      return ncclSuccess;
    case WrKind::Flush:
      if (flushes_.in_use(id.index) && id.qp < member_count_) {
        flush_credits_[id.qp].retire(id.sq_pos);
        if (--flushes_[id.index].remaining == 0) {
          flushes_[id.index].state = RequestState::Done;
        }
        return ncclSuccess;
      }
      break;
    default:
      break;
  }
  return fail_unexpected_wr_id(wc);
}

ncclResult_t RecvComm::handle_completions(int first, int got) noexcept {
  for (int k = first; k < got; ++k) {
    const ibv_wc& wc = wcs_[static_cast<size_t>(k)];
    if (wc.status != IBV_WC_SUCCESS) [[unlikely]] {
      return on_failed_completion(k, got);
    }
    if (ncclResult_t res = handle_completion(wc); res != ncclSuccess) {
      return res;
    }
  }
  return ncclSuccess;
}

// A recovery epoch's fence (recv_recovery.cpp) hands each successful completion here.
ncclResult_t RecvComm::absorb_fenced(const ibv_wc& wc) noexcept {
  return handle_completion(wc);
}

ncclResult_t RecvComm::skip_marker(uint8_t q) noexcept {
  // The message of the QP's next sequence was complete before the epoch (its request may be
  // given back already): the QP only moves on to the next one it carries.
  next_recv_seq_[q] += recv_seq_step_;
  if (++recvs_to_repost_[q] == kRecvRepostBatch) {
    return repost_receives(q);
  }
  return ncclSuccess;
}

ncclResult_t RecvComm::test(RecvRequest& request, int* done, int* sizes) noexcept {
  if (request.state != RequestState::Done) {
    const auto handle = [this](int got) { return on_completions(got); };
    ncclResult_t result = ncclSuccess;
    if (!advance(request, handle, &result)) {
      return result;
    }
  }
  if (sizes != nullptr) {
    for (int i = 0; i < request.count; ++i) {
      sizes[i] = request.received[static_cast<size_t>(i)];
    }
  }
  request.state = RequestState::Free;
  requests_.give_back_taken(request.index);
  *done = 1;
  return ncclSuccess;
}

ncclResult_t RecvComm::test(FlushRequest& request, int* done) noexcept {
  if (request.state != RequestState::Done) {
    const auto handle = [this](int got) { return on_completions(got); };
    ncclResult_t result = ncclSuccess;
    if (!advance(request, handle, &result)) {
      return result;
    }
  }
  request.state = RequestState::Free;
  flushes_.give_back_taken(request.index);
  *done = 1;
  return ncclSuccess;
}

ncclResult_t RecvComm::check_side_health() noexcept {
  if (telemetry_.stall().enabled()) {
    check_stall();
  }
  for (int m = 0; flush_qp_ptr_ != nullptr && m < member_count_; ++m) {
    const verbs::QueuePair* qp = flush_qp_ptrs_[static_cast<size_t>(m)];
    if (qp->has_fatal_event()) [[unlikely]] {
      return fail(ncclSystemError, "the flush qp 0x{:x} reported a fatal asynchronous event",
                  qp->qp_num());
    }
  }
  return ncclSuccess;
}

}  // namespace roce
