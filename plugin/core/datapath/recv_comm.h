// The receiving end of a connection. Zero-SGE receives (consumed by the sender's WRITE WITH
// IMMEDIATE) are posted ahead on every data QP and given back in batches; irecv announces its
// buffers with one RDMA WRITE of a clear-to-send slot into the sender's ring, and a receive
// completion finds its request by the sequence number of the message its QP was due next. Sizes
// come back in the immediate (n == 1) or in the multi-receive sizes area the sender writes before
// its immediate. iflush reads one byte of the last GPU buffer back through a QP connected to
// itself, so the NIC's writes are visible to the GPU. No allocation, lock or syscall of ours on
// these paths.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/datapath/connected_comm.h"
#include "core/datapath/cts_ring.h"
#include "core/datapath/data_path_limits.h"
#include "core/datapath/recv_comm_setup.h"
#include "core/datapath/request.h"
#include "core/datapath/request_pool.h"
#include "core/datapath/send_queue_credits.h"
#include "core/datapath/size_split.h"
#include "core/memory/gdr_staging.h"
#include "core/memory/mr_handle.h"
#include "core/memory/registered_buffer.h"
#include "telemetry/connection_telemetry.h"

namespace roce {

class RecvComm final : public ConnectedComm {
 public:
  RecvComm(std::shared_ptr<DeviceRuntime> device, RecvCommSetup setup);
  ~RecvComm() override;

  // phandles: NCCL's profiler handle per buffer (v10+), or nullptr. Size: NCCL's element type
  // for sizes (int up to v8, size_t from v9; instantiated for both), so that no adapter copies
  // the sizes to widen them. abi/ has checked them: each is 0..kMaxMessageBytes.
  template <typename Size>
  ncclResult_t irecv(int n, void** data, const Size* sizes, const int* tags, void* const* mhandles,
                     void* const* phandles, void** request) noexcept;
  ncclResult_t iflush(int n, void* const* data, const int* sizes, void* const* mhandles,
                      void** request) noexcept;
  ncclResult_t test(RecvRequest& request, int* done, int* sizes) noexcept;
  ncclResult_t test(FlushRequest& request, int* done) noexcept;

  // Largest CTS write posted inline (the QPs' granted max_inline_data; 0: inlining is off).
  uint32_t max_inline() const noexcept { return max_inline_; }
  int fifo_traffic_class() const noexcept { return fifo_traffic_class_; }
  bool flush_enabled() const noexcept { return flush_qp_ != nullptr; }
  // regMr/regMrDmaBuf on this comm, until its first irecv: the evidence of the GPUDirect
  // downgrade check (core/memory/gdr_staging.h). NCCL registers on its proxy service thread
  // and receives on its progress thread (a user-buffer registration can meet the first irecv).
  void note_registration(bool device_memory, uintptr_t addr, size_t size);

 private:
  // Polls the CQ and handles what it finds (connected_comm.h's poll_then).
  ncclResult_t progress() noexcept {
    return poll_then([this](int got) { return on_completions(got); });
  }
  // The got completions in wcs_. Most are the immediate of a message for a receive of one
  // buffer, unprofiled, whose telemetry only counts it, with no batch of receives due to be
  // posted again: those are taken in a loop that calls nothing, so that it saves no registers.
  // One whose telemetry samples its latency goes to on_sampled_completion; any other one hands
  // itself and the rest to handle_completions, which takes every kind and reports every error
  // (both tail calls). Both loops take a receive's completion with retire_receive.
  [[gnu::noinline]] ncclResult_t on_completions(int got) noexcept;
  // Completion k, of `r` (a receive of one buffer), is taken but for its telemetry, which
  // samples it (one in NCCL_ROCE_STATS_SAMPLE) or ends a reported stall: that, then the
  // completions after k go to handle_completions. Out of line, so that the loop keeps calling
  // nothing; not through handle_completions, whose generality would cost the sampled message
  // more than the sample.
  [[gnu::noinline]] ncclResult_t on_sampled_completion(const RecvRequest& r, int k,
                                                       int got) noexcept;
  [[gnu::noinline]] ncclResult_t handle_completions(int first, int got) noexcept;
  // One completion of handle_completions (any kind, successful), also taken by a recovery
  // epoch's fence.
  // Inline (defined in recv_comm.cpp), so that handle_completions' loop keeps its one frame.
  [[gnu::always_inline]] inline ncclResult_t handle_completion(const ibv_wc& wc) noexcept;
  // Completion k failed: a recovery epoch (the completions after k are taken first), or the
  // comm fails as before.
  [[gnu::cold, gnu::noinline]] ncclResult_t on_failed_completion(int k, int got) noexcept;
  // Receive completion wc of data QP q carried an "already complete" marker: the QP moves on.
  ncclResult_t skip_marker(uint8_t q) noexcept;

  // The receiver's side of a recovery epoch (recv_recovery.cpp): it answers the sender's.
  ncclResult_t absorb_fenced(const ibv_wc& wc) noexcept override;
  ncclResult_t step_recovery() noexcept override;
  // Fences the QPs and holds every irecv (no clear-to-send credit) until the epoch's EpochGo.
  ncclResult_t fence_and_hold() noexcept;
  // Answers `start` over the members in `live`: new QPs connected to the sender's, receives
  // posted, the record of what completed and the entries of the receives in flight.
  ncclResult_t answer_start(const net::EpochStart& start, uint8_t live) noexcept;
  // Between epochs: asks the sender (EpochWanted with back_members) to take back a member this
  // side left out once its port is ACTIVE again, at most once per rejoin backoff.
  ncclResult_t ask_for_rejoin(std::chrono::steady_clock::time_point now) noexcept;
  // The member that carries message `seq` over the current QPs.
  uint8_t member_of_message(uint64_t seq) const noexcept {
    return split_data_ ? member_of_qp(qp_of_message(seq, lane_count_) * qps_per_member_)
                       : member_of_qp(qp_of_message(seq, nqps_));
  }
  // The flush QP's fatal mark and the stall check of a health check (connected_comm.h).
  ncclResult_t check_side_health() noexcept override;
  // The request whose message data QP q delivers next (a QP's receives complete in the order
  // of the messages it carries), or kNoRequest when no irecv in flight has that sequence. Both
  // completion loops find their request with it.
  static constexpr uint16_t kNoRequest = UINT16_MAX;
  uint16_t request_due(uint8_t q) const noexcept {
    const uint64_t seq = next_recv_seq_[q];
    const uint16_t index = request_of_seq_[seq & (kCtsRingSlots - 1)];
    return requests_.in_use(index) && requests_[index].seq == seq ? index : kNoRequest;
  }
  // Retires receive completion wc of data QP q (q < nqps_), the message of request `index`
  // (request_due(q)): the QP's next due sequence, its receive counted for posting again (a batch
  // of them posted: repost_receives), and one of the QPs the request waits for, whose size in the
  // immediate (or, with a multi-receive's last QP, the sizes area) is checked against the posted
  // buffers. With the last QP the request is Done and its profiler events stopped. A refused
  // send or a wrong size fails the comm. The one body of both completion loops, so that the
  // protocol's bookkeeping is written once. kCommon: the fast loop has found the request to be
  // an unprofiled receive of one buffer carried by one QP, its size in range and no batch of
  // receives due, and what that rules out is not looked at again (the stores before would make
  // the compiler load it again); the fast loop counts the request's telemetry itself, the general
  // one's is counted here (count_done). Inline (defined in recv_comm.cpp), so that the fast loop
  // keeps calling nothing.
  template <bool kCommon>
  [[gnu::always_inline]] inline ncclResult_t retire_receive(const ibv_wc& wc, uint8_t q,
                                                            uint16_t index) noexcept;
  // A receive is done, carrying `bytes` in all: its telemetry (inline; what it samples or a stall
  // it ends, out of line).
  void count_done(const RecvRequest& r, uint64_t bytes) noexcept {
    telemetry_.completed(bytes, r.posted_ticks, "the wait for data");
  }
  [[gnu::noinline]] void stop_events(RecvRequest& r) noexcept;
  // The peer reported more bytes than the receive (or buffer i of a multi-receive) holds.
  [[gnu::cold, gnu::noinline]] ncclResult_t fail_oversized(uint32_t size, uint32_t posted) noexcept;
  [[gnu::cold, gnu::noinline]] ncclResult_t fail_oversized_member(int32_t size, int i,
                                                                  uint32_t posted) noexcept;
  // The peer refused an isend of `size` bytes that matched a buffer of r too small for it
  // (kRefusedSendImm): r fails with both sizes, as the sender's isend did.
  [[gnu::cold, gnu::noinline]] ncclResult_t fail_refused_send(uint32_t size,
                                                              const RecvRequest& r) noexcept;
  // irecv's buffer i [addr, +size) is not covered by its memory handle: WARN and
  // ncclInvalidArgument.
  [[gnu::cold, gnu::noinline]] ncclResult_t uncovered_buffer(int i, uintptr_t addr,
                                                             uint32_t size) const noexcept;
  // Posts kRecvRepostBatch receives on data QP q (one chained call); the provider's result.
  int post_receive_batch(uint8_t q) noexcept;
  // kRecvRepostBatch receives of QP q were handled: post them again (the comm fails if that
  // fails).
  [[gnu::noinline]] ncclResult_t repost_receives(uint8_t q) noexcept;
  // A receive completed for sequence `seq`, which has no irecv: the peer wrote without a
  // clear-to-send.
  [[gnu::cold, gnu::noinline]] ncclResult_t fail_unmatched_receive(const ibv_wc& wc,
                                                                   uint64_t seq) noexcept;
  // NCCL_ROCE_STALL_WARN_MS reached by the oldest irecv: a WARN.
  void check_stall() noexcept;
  // The first irecv (its first buffer): the GPUDirect downgrade verdict, once per comm; fails
  // the comm (ncclSystemError) on a downgrade with NCCL_ROCE_REQUIRE_GDR=1.
  [[gnu::cold, gnu::noinline]] ncclResult_t check_staging(uintptr_t addr, size_t size) noexcept;
  // iflush found no free `what` (`limit` of them): WARN and ncclInternalError. Not sticky: the
  // comm goes on once earlier flushes are tested.
  ncclResult_t flush_exhausted(const char* what, uint32_t limit) const noexcept;

  // Hot members first.
  CtsEntry* cts_staging_;
  uint32_t cts_staging_lkey_;
  const int32_t* sizes_area_;
  uint64_t remote_ring_addr_;
  uint32_t remote_ring_rkey_;
  uint64_t flush_addr_;
  uint32_t max_inline_;
  // Until the first irecv has run check_staging. Read unlocked on the data path (a plain load on
  // x86); set and the record read under staging_mutex_.
  std::atomic<bool> staging_unchecked_{true};
  RequestPool<RecvRequest, kMaxRequests> requests_;
  RequestPool<FlushRequest, kMaxRequests> flushes_;
  SendQueueCredits cts_credits_;
  // The flush QP of each member (a port: one), its send-queue credits and the flush word's key on
  // that member's PD.
  std::array<SendQueueCredits, MrHandle::kMaxMembers> flush_credits_{};
  std::array<verbs::QueuePair*, MrHandle::kMaxMembers> flush_qp_ptrs_{};
  std::array<uint32_t, MrHandle::kMaxMembers> flush_lkeys_{};
  verbs::QueuePair* flush_qp_ptr_ = nullptr;  // member 0's, null: no flush
  // The request of each sequence number in flight (irecv order; kCtsRingSlots > kMaxRequests).
  std::array<uint16_t, kCtsRingSlots> request_of_seq_{};
  // Per data QP: the sequence of the message whose immediate it delivers next, and how many of
  // its receives were handled since they were last posted again.
  std::array<uint64_t, kMaxQpsPerConnection> next_recv_seq_{};
  std::array<uint32_t, kMaxQpsPerConnection> recvs_to_repost_{};
  // 1 when every QP carries every message (split, one member), the member count when each
  // member's QPs carry its turn (split on a virtual NIC), else nqps.
  uint64_t recv_seq_step_ = 1;
  std::array<ibv_recv_wr, kRecvRepostBatch> repost_wrs_{};  // chained: one post per batch
  ibv_send_wr cts_wr_{};
  ibv_sge cts_sge_{};
  ibv_send_wr flush_wr_{};
  ibv_sge flush_sge_{};

  // Cold: the buffers the QPs' work requests point into, and the flush QP (the destructor
  // destroys the QPs first).
  RegisteredBuffer cts_staging_buffer_;
  RegisteredBuffer sizes_area_buffer_;
  RegisteredBuffer flush_word_;
  std::unique_ptr<verbs::QueuePair> flush_qp_;
  std::vector<std::unique_ptr<verbs::QueuePair>> more_flush_qps_;
  int fifo_traffic_class_;
  std::mutex staging_mutex_;  // note_registration against check_staging
  StagingRecord staging_;     // what was registered before the first irecv
};

}  // namespace roce
