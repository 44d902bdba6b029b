// The sender's data path; see send_comm.h for the protocol.
#include "core/datapath/send_comm.h"

#include "core/datapath/size_split.h"
#include "core/datapath/wr_id.h"
#include "verbs/error.h"

namespace roce {

SendComm::SendComm(std::shared_ptr<DeviceRuntime> device, SendCommSetup setup)
    : ConnectedComm(CommKind::Send, std::move(device),
                    std::move(static_cast<ConnectionSetup&>(setup))),
      ring_entries_(static_cast<const CtsEntry*>(setup.ring.data())),
      sizes_staging_(static_cast<int32_t*>(setup.sizes_staging.data())),
      remote_sizes_addr_(setup.remote_sizes_addr),
      ar_threshold_(setup.ar_threshold ? *setup.ar_threshold : UINT64_MAX),
      max_inline_(UINT32_MAX),
      single_qp_messages_(!split_data_ || nqps_ == 1),
      ring_(std::move(setup.ring)),
      sizes_staging_buffer_(std::move(setup.sizes_staging)) {
  for (int q = 0; q < nqps_; ++q) {
    verbs::QueuePair& qp = *qps_[static_cast<size_t>(q)];
    credits_[static_cast<size_t>(q)] = SendQueueCredits(qp.capabilities().max_send_wr - 1, 1);
    max_inline_ = std::min(max_inline_, qp.capabilities().max_inline_data);
  }
  for (int m = 0; m < member_count_; ++m) {
    const auto i = static_cast<size_t>(m);
    sizes_staging_lkeys_[i] = sizes_staging_buffer_.lkey(i);
    remote_sizes_rkeys_[i] =
        m == 0 ? setup.remote_sizes_rkey : setup.more_remote_sizes_rkeys[i - 1];
  }
  // What the work request of a send matched to a single receive never changes.
  single_wr_.sg_list = &single_sge_;
  single_wr_.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  single_wr_.next = nullptr;
  for (uint16_t i = 0; i < requests_.capacity(); ++i) {
    SendRequest& r = requests_[i];
    r.kind = RequestKind::Send;
    r.index = i;
    r.comm = this;
  }
}

SendComm::~SendComm() {
  // The QPs go first, before the telemetry's close-time summary reads the port counters, so
  // that what the NIC counted for them is in (vroce publishes its counters as a QP goes).
  qps_.clear();
}

ncclResult_t SendComm::isend(void* data, size_t size, int tag, const MrHandle* mh, void* phandle,
                             void** request, const CtsEntry* begun) noexcept {
  if (failed()) [[unlikely]] {
    return failure();
  }
  if (begun != nullptr) {
    int count = 0;
    switch (check_begun_cts_slot(begun, next_seq_, &count)) {
      case CtsSlotState::NotReady:
        return wait_for_cts();
      case CtsSlotState::Corrupt:
        return fail(ncclRemoteError,
                    "clear-to-send slot {} from {} is malformed (count {}); the peer is not a "
                    "compatible RoCE plugin or its memory is corrupted",
                    next_seq_, peer_, begun[0].count);
      case CtsSlotState::Ready:
        if (count == 1 && single_qp_messages_) [[likely]] {
          // NCCL's common case: a receive of one buffer, carried by one QP. The entry is matched
          // and posted at once, without the multi-receive bookkeeping.
          const CtsEntry entry = read_single_cts_entry(begun, next_seq_);
          if (entry.tag == tag) [[likely]] {
            return isend_single(entry, data, size, mh, phandle, request);
          }
        }
        pending_.load(begun, count);
        break;
    }
  }
  const int i = pending_.find(tag);
  if (i < 0) {
    return ncclSuccess;  // this send belongs to a later multi-receive
  }
  SendRequest* r = nullptr;
  const auto [q_begin, q_end] = qps_of_message(next_seq_);
  if (ncclResult_t res = start_send(pending_.entry(i), data, size, mh, phandle, q_begin, q_end, &r);
      res != ncclSuccess || r == nullptr) {
    return res;
  }
  set_buffer(*r, member_of_qp(q_begin));
  pending_.match(i, r->index, r->size);
  *request = static_cast<RequestHeader*>(r);
  if (pending_.complete()) {
    return post_group();
  }
  return ncclSuccess;
}

ncclResult_t SendComm::wait_for_cts() noexcept {
  if (failed()) [[unlikely]] {
    return failure();
  }
  // Nothing to match yet; NCCL calls again. As in net_ib, no CQ poll here: the peer's
  // clear-to-send arrives by RDMA WRITE without this process doing anything, and finished sends
  // are retired by test(). A cheap moment to notice a dead device or QP.
  if (cts_wait_since_ == 0) {
    cts_wait_since_ = telemetry::now_ticks();
  }
  return check_health();
}

ncclResult_t SendComm::start_send(const CtsEntry& entry, void* data, size_t size,
                                  const MrHandle* mh, void* phandle, int q_begin, int q_end,
                                  SendRequest** out) noexcept {
  if (size > entry.size) [[unlikely]] {
    return larger_than_receive(size, entry.tag, entry.size, entry.addr, entry.rkey, q_begin);
  }
  const auto addr = reinterpret_cast<uintptr_t>(data);
  if (size > 0) {
    if (!mh->valid() || mh->device_id != device_id_ || !mh->covers(addr, size)) [[unlikely]] {
      return uncovered_buffer(addr, size, *mh);
    }
  }
  // Worst case a group takes n + 1 work requests per QP; make room before committing.
  for (int q = q_begin; q < q_end; ++q) {
    if (!credits_[static_cast<size_t>(q)].can_post(kMaxRecvs + 1)) [[unlikely]] {
      if (ncclResult_t r = progress(); r != ncclSuccess) {
        return r;
      }
      if (!credits_[static_cast<size_t>(q)].can_post(kMaxRecvs + 1)) {
        // NCCL retries. A recovery epoch holds every send this way: its health check steps it.
        return check_health();
      }
    }
  }
  const uint16_t slot_index = requests_.take();
  if (slot_index == requests_.kNoSlot) [[unlikely]] {
    return ncclSuccess;  // NCCL has kMaxSendRequests sends untested; it retries
  }
  SendRequest& r = requests_[slot_index];
  const uint64_t now = telemetry::now_ticks();
  r.posted_ticks = now;
  r.event.phandle = phandle;
  if (cts_wait_since_ != 0) {
    cts_wait_ended(now);
  }
  r.state = RequestState::Pending;
  r.size = static_cast<uint32_t>(size);
  r.seq = next_seq_;
  r.addr = addr;
  r.mh = mh;
  *out = &r;
  return ncclSuccess;
}

void SendComm::set_buffer(SendRequest& r, uint8_t member) noexcept {
  r.lkey = r.size > 0 ? r.mh->lkeys[member] : 0;
  r.host_memory = r.size == 0 || !r.mh->gpu_memory();
}

ncclResult_t SendComm::larger_than_receive(size_t size, int tag, uint32_t receive_size,
                                           uint64_t receive_addr, uint32_t receive_rkey,
                                           int q) noexcept {
  // The receiver waits for this message's immediate on QP q (the first QP of the message): a
  // zero-length WRITE WITH IMMEDIATE flagged as a refusal fails its request too (issue 49: it
  // waited forever). Unsignaled: the comm fails now and nothing will poll for it; an error on
  // it would only repeat this one. Without a send-queue entry left the receiver cannot be told,
  // and the WARN says so.
  auto& credits = credits_[static_cast<size_t>(q)];
  bool told = false;
  if (credits.can_post(1)) {
    ibv_send_wr notice{};
    notice.wr_id =
        pack_wr_id(WrKind::SendGroup, static_cast<uint8_t>(q), requests_.kNoSlot, credits.post());
    notice.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    notice.num_sge = 0;
    notice.wr.rdma.remote_addr = receive_addr;
    notice.wr.rdma.rkey = receive_rkey;
    notice.imm_data = kRefusedSendImm | static_cast<uint32_t>(size);
    ibv_send_wr* bad = nullptr;
    told = qp_ptrs_[static_cast<size_t>(q)]->post_send(&notice, &bad) == 0;
  }
  return fail(ncclInvalidUsage,
              "isend of {} bytes (tag {}) matched a receive of only {} bytes from {}; a send may "
              "not be larger than its receive{}",
              size, tag, receive_size, peer_,
              told ? " (the receiver's irecv fails too)"
                   : " (the receiver could not be told: its irecv waits until it is closed)");
}

ncclResult_t SendComm::uncovered_buffer(uintptr_t addr, size_t size, const MrHandle& mh) noexcept {
  ROCE_WARN(NCCL_NET,
            "send comm on {}: isend buffer [0x{:x}, +{}) is not covered by its memory handle "
            "(registered on {}, [0x{:x}, +{})); register the buffer on this comm's device",
            device().name(), addr, size, mh.valid() ? "a device" : "nothing", mh.addr, mh.length);
  return ncclInvalidArgument;
}

ncclResult_t SendComm::isend_single(const CtsEntry& entry, void* data, size_t size,
                                    const MrHandle* mh, void* phandle, void** request) noexcept {
  // single_qp_messages_: the message goes on the one QP its sequence names.
  const int q = qp_of_message(next_seq_, nqps_);
  SendRequest* r = nullptr;
  if (ncclResult_t res = start_send(entry, data, size, mh, phandle, q, q + 1, &r);
      res != ncclSuccess || r == nullptr) {
    return res;  // not posted: the next isend reads the slot again
  }
  auto& credits = credits_[static_cast<size_t>(q)];
  r->group_count = 1;
  r->remaining_qps = 1;
  r->members[0] = r->index;
  lead_of_seq_[cts_slot_of(next_seq_)] = r->index;
  const ibv_send_wr* posted = nullptr;
  if (size <= ar_threshold_) [[likely]] {
    // One signaled WRITE WITH IMMEDIATE from the preset work request: only what differs from
    // one message to the next is written. The request keeps no buffer (set_buffer): nothing
    // after the post reads it.
    single_sge_.addr = reinterpret_cast<uintptr_t>(data);
    single_sge_.length = r->size;
    if (size > 0) {
      single_sge_.lkey = mh->lkeys[member_of_qp(q)];
      single_wr_.num_sge = 1;
      single_wr_.send_flags = IBV_SEND_SIGNALED | inline_flag(!mh->gpu_memory(), size);
    } else {
      single_wr_.num_sge = 0;
      single_wr_.send_flags = IBV_SEND_SIGNALED;
    }
    single_wr_.wr.rdma.remote_addr = entry.addr;
    single_wr_.wr.rdma.rkey = entry.rkey;
    single_wr_.imm_data = r->size;
    const uint32_t pos = credits.post();
    credits.signaled_at(pos);
    single_wr_.wr_id = pack_wr_id(WrKind::SendGroup, static_cast<uint8_t>(q), r->index, pos);
    if (ncclResult_t res = post(q, &single_wr_); res != ncclSuccess) [[unlikely]] {
      return res;  // the comm has failed; *request stays cleared
    }
    posted = &single_wr_;
  } else {
    set_buffer(*r, member_of_qp(q));
    const int w = add_single_wrs(*r, entry, Chunk{0, r->size}, q, credits);
    if (ncclResult_t res = post_wrs(q, w, credits); res != ncclSuccess) [[unlikely]] {
      return res;
    }
    posted = &wrs_[static_cast<size_t>(w - 1)];
  }
  *request = static_cast<RequestHeader*>(r);
  if (profiling_) [[unlikely]] {
    r->event.start(device().index(), posted->wr_id, IBV_WR_RDMA_WRITE_WITH_IMM,
                   qp_ptrs_[static_cast<size_t>(q)]->qp_num(), r->size);
  }
  ++next_seq_;
  return ncclSuccess;
}

void SendComm::add_wr(int w, ibv_wr_opcode opcode, uint64_t local, uint32_t length, uint32_t lkey,
                      uint64_t remote, uint32_t rkey, bool may_inline, int q, uint16_t lead,
                      SendQueueCredits& credits) noexcept {
  ibv_send_wr& wr = wrs_[static_cast<size_t>(w)];
  ibv_sge& sge = sges_[static_cast<size_t>(w)];
  sge.addr = local;
  sge.length = length;
  sge.lkey = lkey;
  wr.sg_list = &sge;
  wr.num_sge = length > 0 ? 1 : 0;
  wr.opcode = opcode;
  wr.send_flags = inline_flag(may_inline, length);
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  wr.wr_id = pack_wr_id(WrKind::SendGroup, static_cast<uint8_t>(q), lead, credits.post());
  wr.next = nullptr;
  if (w > 0) {
    wrs_[static_cast<size_t>(w - 1)].next = &wr;
  }
}

int SendComm::add_single_wrs(const SendRequest& r, const CtsEntry& e, Chunk c, int q,
                             SendQueueCredits& credits) noexcept {
  int w = 0;
  if (r.size <= ar_threshold_) [[likely]] {
    add_wr(w++, IBV_WR_RDMA_WRITE_WITH_IMM, r.addr + c.offset, static_cast<uint32_t>(c.length),
           r.lkey, e.addr + c.offset, e.rkey, r.host_memory, q, r.index, credits);
  } else {
    // Adaptive routing (net_ib's rule): the data as a plain RDMA WRITE, then the completion as a
    // zero-length WRITE WITH IMMEDIATE, which RC delivers after all the data.
    if (c.length > 0) {
      add_wr(w++, IBV_WR_RDMA_WRITE, r.addr + c.offset, static_cast<uint32_t>(c.length), r.lkey,
             e.addr + c.offset, e.rkey, r.host_memory, q, r.index, credits);
    }
    add_wr(w++, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0, r.lkey, e.addr, e.rkey, false, q, r.index,
           credits);
  }
  wrs_[static_cast<size_t>(w - 1)].imm_data = r.size;
  return w;
}

ncclResult_t SendComm::post_wrs(int q, int w, SendQueueCredits& credits) noexcept {
  ibv_send_wr& last = wrs_[static_cast<size_t>(w - 1)];
  last.send_flags |= IBV_SEND_SIGNALED;
  credits.signaled_at(static_cast<uint32_t>(last.wr_id >> 32));
  return post(q, &wrs_[0]);
}

ncclResult_t SendComm::post(int q, ibv_send_wr* wrs) noexcept {
  ibv_send_wr* bad = nullptr;
  if (int rc = qp_ptrs_[static_cast<size_t>(q)]->post_send(wrs, &bad); rc != 0) [[unlikely]] {
    return fail(ncclSystemError, "ibv_post_send on qp 0x{:x} failed: {}; to {}",
                qp_ptrs_[static_cast<size_t>(q)]->qp_num(), verbs::errno_text(rc), peer_);
  }
  return ncclSuccess;
}

ncclResult_t SendComm::post_group() noexcept {
  const int n = pending_.count();
  SendRequest& lead = requests_[pending_.send_request(0)];
  lead.group_count = static_cast<uint8_t>(n);
  for (int i = 0; i < n; ++i) {
    lead.members[static_cast<size_t>(i)] = pending_.send_request(i);
  }
  lead_of_seq_[cts_slot_of(next_seq_)] = lead.index;
  if (ncclResult_t r = post_message(next_seq_, lead, pending_.entries(), false); r != ncclSuccess)
      [[unlikely]] {
    return r;
  }
  pending_.clear();
  ++next_seq_;
  return ncclSuccess;
}

ncclResult_t SendComm::post_message(uint64_t seq, SendRequest& lead, const CtsEntry* entries,
                                    bool again) noexcept {
  const int n = lead.group_count;
  const auto [q_begin, q_end] = qps_of_message(seq);
  lead.remaining_qps = static_cast<uint8_t>(q_end - q_begin);
  uint64_t sizes_remote = 0;
  int32_t* staged = nullptr;
  if (n > 1) {
    const uint16_t receiver_request = entries[0].request;
    if (receiver_request >= kMaxRequests) [[unlikely]] {
      return fail(ncclRemoteError,
                  "clear-to-send slot {} from {} names receive request {}, beyond the {} a comm "
                  "holds",
                  seq, peer_, receiver_request, kMaxRequests);
    }
    sizes_remote = remote_sizes_addr_ + uint64_t{receiver_request} * kMaxRecvs * sizeof(int32_t);
    staged = sizes_staging_ + size_t{lead.index} * kMaxRecvs;
    for (int i = 0; i < n; ++i) {
      staged[i] = static_cast<int32_t>(requests_[lead.members[static_cast<size_t>(i)]].size);
    }
  }

  uint64_t last_signaled_wr_id = 0;
  // Plain copies for the lambda: clang 14 cannot capture structured bindings.
  const int first_qp = q_begin;
  const int message_qps = q_end - q_begin;
  for (int q = q_begin; q < q_end; ++q) {
    auto& credits = credits_[static_cast<size_t>(q)];
    const auto part = [&](size_t size) {
      return split_data_ ? chunk_for_qp(size, q - first_qp, message_qps) : Chunk{0, size};
    };
    int w = 0;
    if (n == 1) {
      w = add_single_wrs(lead, entries[0], part(lead.size), q, credits);
    } else {
      for (int i = 0; i < n; ++i) {
        const SendRequest& r = requests_[lead.members[static_cast<size_t>(i)]];
        const CtsEntry& e = entries[i];
        const Chunk c = part(r.size);
        if (c.length > 0) {
          add_wr(w++, IBV_WR_RDMA_WRITE, r.addr + c.offset, static_cast<uint32_t>(c.length), r.lkey,
                 e.addr + c.offset, e.rkey, r.host_memory, q, lead.index, credits);
        }
      }
      // The first QP of the message delivers the sizes; the others only their immediate, which
      // counts the group done (the receiver reads the sizes after the last immediate).
      const uint32_t sizes_bytes = q == q_begin ? static_cast<uint32_t>(n) * 4u : 0;
      const uint8_t member = member_of_qp(q);
      add_wr(w++, IBV_WR_RDMA_WRITE_WITH_IMM, reinterpret_cast<uintptr_t>(staged), sizes_bytes,
             sizes_staging_lkeys_[member], sizes_remote, remote_sizes_rkeys_[member], true, q,
             lead.index, credits);
      wrs_[static_cast<size_t>(w - 1)].imm_data = static_cast<uint32_t>(n);
    }
    last_signaled_wr_id = wrs_[static_cast<size_t>(w - 1)].wr_id;
    if (ncclResult_t r = post_wrs(q, w, credits); r != ncclSuccess) [[unlikely]] {
      return r;
    }
  }
  // One profiler event per send, for the signaled WRITE WITH IMMEDIATE that completes it (on the
  // message's last QP), as net_ib reports its QP events. A recovery epoch's resend ends the
  // event on the failed QP and starts one on the new QP, so a profiler shows the replay.
  if (profiling_) [[unlikely]] {
    const uint32_t qpn = qp_ptrs_[static_cast<size_t>(q_end - 1)]->qp_num();
    for (int i = 0; i < n; ++i) {
      SendRequest& r = requests_[lead.members[static_cast<size_t>(i)]];
      if (again) {
        r.event.stop();
      }
      r.event.start(device().index(), last_signaled_wr_id, IBV_WR_RDMA_WRITE_WITH_IMM, qpn, r.size);
    }
  }
  return ncclSuccess;
}

template <bool kCommon>
void SendComm::retire_send(const ibv_wc& wc, SendRequest& lead) noexcept {
  credits_[wr_id_qp(wc.wr_id)].retire(wr_id_sq_pos(wc.wr_id));
  if constexpr (kCommon) {
    lead.remaining_qps = 0;  // its one QP
  } else if (--lead.remaining_qps != 0) {
    return;  // the group's other QPs have yet to complete their parts
  }
  const auto done = [&](SendRequest& r) {
    r.state = RequestState::Done;
    if constexpr (!kCommon) {
      r.event.stop();
      count_done(r);
    }
  };
  if (kCommon || lead.group_count == 1) [[likely]] {  // a send that matched a single receive
    done(lead);
    return;
  }
  for (size_t i = 0; i < lead.group_count; ++i) {
    done(requests_[lead.members[i]]);
  }
}

ncclResult_t SendComm::on_completions(int got) noexcept {
  for (int k = 0; k < got; ++k) {
    const ibv_wc& wc = wcs_[static_cast<size_t>(k)];
    if (wc.status != IBV_WC_SUCCESS || !names_send_group(wc.wr_id)) [[unlikely]] {
      return handle_completions(k, got);  // reports it
    }
    SendRequest& lead = requests_[wr_id_index(wc.wr_id)];
    // Only a send matched to a single receive, on one QP and unprofiled, is taken here.
    if (lead.remaining_qps != 1 || lead.group_count != 1 || lead.event.handle != nullptr)
        [[unlikely]] {
      return handle_completions(k, got);
    }
    retire_send<true>(wc, lead);
    // Its telemetry here, so that a sampled one leaves the loop by a tail call.
    if (!telemetry_.next_completion_quiet()) [[unlikely]] {
      return on_sampled_completion(lead, k, got);
    }
    telemetry_.completed_quietly(lead.size);
  }
  if (got < 0) [[unlikely]] {
    return fail_poll(got);
  }
  return ncclSuccess;
}

ncclResult_t SendComm::on_sampled_completion(const SendRequest& lead, int k, int got) noexcept {
  count_done(lead);
  return k + 1 < got ? handle_completions(k + 1, got) : ncclSuccess;
}

ncclResult_t SendComm::handle_completions(int first, int got) noexcept {
  for (int k = first; k < got; ++k) {
    const ibv_wc& wc = wcs_[static_cast<size_t>(k)];
    if (wc.status != IBV_WC_SUCCESS) [[unlikely]] {
      return on_failed_completion(k, got);
    }
    // Only signaled WRITE WITH IMMEDIATEs complete here; anything else is a bug or corruption.
    if (!names_send_group(wc.wr_id)) [[unlikely]] {
      return fail_unexpected_wr_id(wc);
    }
    retire_send<false>(wc, requests_[wr_id_index(wc.wr_id)]);
  }
  return ncclSuccess;
}

void SendComm::cts_wait_ended(uint64_t now) noexcept {
  telemetry_.stats().cts_waited(now - cts_wait_since_);
  telemetry_.wait_ended("the wait for the peer's clear-to-send", cts_wait_since_, now);
  cts_wait_since_ = 0;
}

void SendComm::check_cts_stall() noexcept {
  if (const auto ms = telemetry_.stall().warn_after(cts_wait_since_, telemetry::now_ticks())) {
    telemetry_.warn_stall(
        "isend is waiting for the peer's clear-to-send (message " + std::to_string(next_seq_) + ")",
        *ms,
        "the peer is not receiving: its irecv for this message has not been posted. Look at "
        "the peer rank (stalled, or waiting for something else), not at the fabric");
  }
}

void SendComm::check_completion_stall() noexcept {
  const SendRequest* oldest = oldest_pending(requests_);
  if (oldest == nullptr) {
    return;
  }
  if (const auto ms = telemetry_.stall().warn_after(oldest->posted_ticks, telemetry::now_ticks())) {
    if (recovering()) {
      telemetry_.warn_stall(
          "a " + std::to_string(oldest->size) + "-byte send is waiting for recovery epoch " +
              std::to_string(recovery_->phase == EpochPhase::WaitingForPort ? recovery_->epoch + 1
                                                                            : recovery_->epoch) +
              " (" + epoch_phase_name(recovery_->phase) + ")",
          *ms,
          "the connection's QPs failed and are being made again (see the WARN or INFO line of "
          "the epoch's start); it waits for a port to be ACTIVE, or for the receiver, which "
          "answers at its next call into NCCL");
      return;
    }
    telemetry_.warn_stall(
        "a " + std::to_string(oldest->size) + "-byte send is waiting for its completion", *ms,
        "its RDMA WRITE is not being acknowledged: packet loss, a link down or PFC pauses on "
        "the path, or the peer's NIC is dead. Check the port counters on both ends "
        "(scripts/diagnose_roce.sh) and the peer host; RC retries end in RETRY_EXC within "
        "NCCL_IB_TIMEOUT and NCCL_IB_RETRY_CNT");
  }
}

ncclResult_t SendComm::test(SendRequest& request, int* done, int* size) noexcept {
  if (request.state != RequestState::Done) {
    const auto handle = [this](int got) { return on_completions(got); };
    ncclResult_t result = ncclSuccess;
    if (!advance(request, handle, &result)) {
      return result;
    }
  }
  if (size != nullptr) {
    *size = static_cast<int>(request.size);
  }
  request.state = RequestState::Free;
  requests_.give_back_taken(request.index);
  *done = 1;
  return ncclSuccess;
}

ncclResult_t SendComm::check_side_health() noexcept {
  if (telemetry_.stall().enabled()) {
    if (cts_wait_since_ != 0) {
      check_cts_stall();
    }
    check_completion_stall();
  }
  return ncclSuccess;
}

// The parts of the sender's recovery epochs (send_recovery.cpp) that use the inline helpers above.

ncclResult_t SendComm::absorb_fenced(const ibv_wc& wc) noexcept {
  if (!names_send_group(wc.wr_id)) {
    return fail_unexpected_wr_id(wc);
  }
  retire_send<false>(wc, requests_[wr_id_index(wc.wr_id)]);
  return ncclSuccess;
}

ncclResult_t SendComm::post_marker(int q) noexcept {
  auto& credits = credits_[static_cast<size_t>(q)];
  ibv_send_wr marker{};
  marker.wr_id =
      pack_wr_id(WrKind::SendGroup, static_cast<uint8_t>(q), requests_.kNoSlot, credits.post());
  marker.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  marker.num_sge = 0;
  marker.imm_data = kAlreadyCompleteImm;
  // Unsignaled: it completes nothing here; the next signaled request of the QP retires it.
  return post(q, &marker);
}

void SendComm::rebind_buffers(SendRequest& lead, uint8_t member) noexcept {
  for (size_t i = 0; i < lead.group_count; ++i) {
    set_buffer(requests_[lead.members[i]], member);
  }
}

}  // namespace roce
