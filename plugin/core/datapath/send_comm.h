// The sending end of a connection. It owns the clear-to-send ring the receiver writes into, the
// data QPs and their CQ, and the pools the data path draws from. isend matches each send to the
// oldest pending multi-receive (by tag), and once all n entries of that multi-receive are matched
// posts, on every data QP, the RDMA WRITEs of its share of the data ending in one signaled WRITE
// WITH IMMEDIATE (which also carries the sizes of a multi-receive). test polls the CQ and maps
// each completion to its group by wr_id. No allocation, lock or syscall of ours on these paths.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/datapath/connected_comm.h"
#include "core/datapath/cts_ring.h"
#include "core/datapath/data_path_limits.h"
#include "core/datapath/multi_recv_match.h"
#include "core/datapath/request.h"
#include "core/datapath/request_pool.h"
#include "core/datapath/send_comm_setup.h"
#include "core/datapath/send_queue_credits.h"
#include "core/datapath/size_split.h"
#include "core/datapath/wr_id.h"
#include "core/memory/mr_handle.h"
#include "core/memory/registered_buffer.h"
#include "telemetry/connection_telemetry.h"

namespace roce {

class SendComm final : public ConnectedComm {
 public:
  SendComm(std::shared_ptr<DeviceRuntime> device, SendCommSetup setup);
  ~SendComm() override;

  // phandle: NCCL's profiler handle for this send (v10+), or nullptr. `begun`: what
  // begun_cts_slot() found, or nullptr while a multi-receive is being matched
  // (matching_multi_receive()); last, so that the other arguments stay in the registers the
  // adapter received them in.
  ncclResult_t isend(void* data, size_t size, int tag, const MrHandle* mh, void* phandle,
                     void** request, const CtsEntry* begun) noexcept;
  ncclResult_t test(SendRequest& request, int* done, int* size) noexcept;

  // What isend may match, looked at inline in the adapters: while the peer has not received
  // yet, NCCL's proxy calls isend again and again, and those calls then cost no call into isend
  // and its frame, only wait_for_cts(). The slot found is handed to isend, which does not look
  // for it again.
  // Whether some entries of a multi-receive are matched and the rest wait for their sends.
  bool matching_multi_receive() const noexcept { return pending_.loaded(); }
  // The clear-to-send slot of the next message once the receiver has begun writing it (its
  // first entry carries the sequence), else nullptr.
  const CtsEntry* begun_cts_slot() const noexcept {
    const CtsEntry* slot = next_slot();
    return cts_slot_begun(slot, next_seq_) ? slot : nullptr;
  }
  // isend's answer when it has nothing to match: the comm's failure, or ncclSuccess with no
  // request (NCCL calls again), the wait recorded for telemetry and the comm's health checked.
  [[gnu::noinline]] ncclResult_t wait_for_cts() noexcept;

  // For logs and tests: the largest payload posted inline (the QPs' granted max_inline_data; 0:
  // inlining is off).
  uint32_t max_inline() const noexcept { return max_inline_; }

 private:
  // The clear-to-send slot of the next message (sequence next_seq_) in the ring.
  const CtsEntry* next_slot() const noexcept {
    return ring_entries_ + size_t{cts_slot_of(next_seq_)} * kMaxRecvs;
  }
  // The checks and the request of an isend matched to `entry`, whose message the QPs [q_begin,
  // q_end) carry (qps_of_message(), computed once by the caller): *out is the request taken
  // (still to be posted; its buffer not yet set: set_buffer), or nullptr with ncclSuccess when it
  // cannot be posted now (no send-queue room or no free request: NCCL retries).
  [[gnu::always_inline]] inline ncclResult_t start_send(const CtsEntry& entry, void* data,
                                                        size_t size, const MrHandle* mh,
                                                        void* phandle, int q_begin, int q_end,
                                                        SendRequest** out) noexcept;
  // The key and kind of the buffer of a request start_send took (which keeps its address and
  // handle), for the paths that build its work requests later from the request (multi-receives,
  // split messages, adaptive routing, a recovery epoch's resend): member's key.
  [[gnu::always_inline]] inline void set_buffer(SendRequest& r, uint8_t member) noexcept;
  // An isend matched to a receive of one buffer carried by one QP (every message on one QP:
  // single_qp_messages_): posted at once.
  ncclResult_t isend_single(const CtsEntry& entry, void* data, size_t size, const MrHandle* mh,
                            void* phandle, void** request) noexcept;
  // A multi-receive (or a message split over QPs) all of whose entries are matched.
  ncclResult_t post_group() noexcept;
  // The work requests of message `seq`, whose sends lead.members (lead.group_count of them,
  // their buffers set: set_buffer) matched `entries`, on the QPs that carry it. `again`: a
  // recovery epoch posts it again (its profiler events and sizes are already there).
  ncclResult_t post_message(uint64_t seq, SendRequest& lead, const CtsEntry* entries,
                            bool again) noexcept;
  // Work request w of the list posted next on QP q, for the group led by request `lead`.
  [[gnu::always_inline]] inline void add_wr(int w, ibv_wr_opcode opcode, uint64_t local,
                                            uint32_t length, uint32_t lkey, uint64_t remote,
                                            uint32_t rkey, bool may_inline, int q, uint16_t lead,
                                            SendQueueCredits& credits) noexcept;
  // The work requests of send r, matched to the receive of one buffer e, for its part c on QP q:
  // one WRITE WITH IMMEDIATE, or above ar_threshold_ a WRITE then a zero-length one. Their count.
  [[gnu::always_inline]] inline int add_single_wrs(const SendRequest& r, const CtsEntry& e, Chunk c,
                                                   int q, SendQueueCredits& credits) noexcept;
  // Signals the last of the w work requests built and posts them on QP q.
  [[gnu::always_inline]] inline ncclResult_t post_wrs(int q, int w,
                                                      SendQueueCredits& credits) noexcept;
  // Posts the chain `wrs` on QP q; a failure fails the comm.
  [[gnu::always_inline]] inline ncclResult_t post(int q, ibv_send_wr* wrs) noexcept;
  // The send is larger than the receive it matched: the comm fails (NCCL's usage error), and a
  // refusal notice (kRefusedSendImm) on QP q, the message's first, fails the receiver's request.
  // Out of line and by value, so that the clear-to-send entry it reports from can stay in
  // registers.
  [[gnu::cold, gnu::noinline]] ncclResult_t larger_than_receive(size_t size, int tag,
                                                                uint32_t receive_size,
                                                                uint64_t receive_addr,
                                                                uint32_t receive_rkey,
                                                                int q) noexcept;
  [[gnu::cold, gnu::noinline]] ncclResult_t uncovered_buffer(uintptr_t addr, size_t size,
                                                             const MrHandle& mh) noexcept;
  // The QPs [first, last) that carry the message of sequence next_seq_: when splitting, all of
  // them, or on a virtual NIC all of the member's whose turn it is (a message stays on one
  // member, so one key of each registration serves it); else the one qp_of_message names.
  std::pair<int, int> qps_of_message(uint64_t seq) const noexcept {
    if (split_data_) {
      if (lane_count_ == 1) {
        return {0, nqps_};
      }
      const int m = qp_of_message(seq, lane_count_);
      return {m * qps_per_member_, (m + 1) * qps_per_member_};
    }
    const int q = qp_of_message(seq, nqps_);
    return {q, q + 1};
  }
  // IBV_SEND_INLINE for a payload of `length` bytes that the QPs may copy into the work request
  // (host memory, 1 to max_inline_ bytes), else 0.
  unsigned inline_flag(bool host_memory, uint64_t length) const noexcept {
    return host_memory && length > 0 && length <= max_inline_ ? unsigned{IBV_SEND_INLINE} : 0U;
  }
  // Whether a completion's wr_id names a send group of this comm: a SendGroup wr_id, of one of
  // its QPs, whose request is in use. Both completion loops take only those.
  bool names_send_group(uint64_t wr_id) const noexcept {
    return wr_id_is(wr_id, WrKind::SendGroup) && wr_id_qp(wr_id) < nqps_ &&
           requests_.in_use(wr_id_index(wr_id));
  }
  // Polls the CQ and handles what it finds (connected_comm.h's poll_then).
  ncclResult_t progress() noexcept {
    return poll_then([this](int got) { return on_completions(got); });
  }
  // The got completions in wcs_. Most are the one signaled completion of a send matched to a
  // single receive, unprofiled, whose telemetry only counts it: those are taken in a loop that
  // calls nothing, so that it saves no registers. One whose telemetry samples its latency goes
  // to on_sampled_completion; any other one hands itself and the rest to handle_completions,
  // which takes every kind and reports every error (both tail calls). Both loops take a
  // completion with retire_send.
  [[gnu::noinline]] ncclResult_t on_completions(int got) noexcept;
  // Completion k, of `lead`, is taken but for its telemetry, which samples it (one in
  // NCCL_ROCE_STATS_SAMPLE) or ends a reported stall: that, then the completions after k go to
  // handle_completions. Out of line, so that the loop keeps calling nothing; not through
  // handle_completions, whose generality would cost the sampled message more than the sample.
  [[gnu::noinline]] ncclResult_t on_sampled_completion(const SendRequest& lead, int k,
                                                       int got) noexcept;
  [[gnu::noinline]] ncclResult_t handle_completions(int first, int got) noexcept;
  // Completion k failed: a recovery epoch begins (the completions after k are taken first), or
  // the comm fails as before.
  [[gnu::cold, gnu::noinline]] ncclResult_t on_failed_completion(int k, int got) noexcept;

  // The sender's recovery epochs (send_recovery.cpp): it starts them, the receiver answers.
  ncclResult_t absorb_fenced(const ibv_wc& wc) noexcept override;
  ncclResult_t step_recovery() noexcept override;
  // step_recovery's body; what it throws (an allocation) fails the comm there.
  ncclResult_t step_epoch();
  // Fences the QPs, holds every isend (no send-queue credit) and waits for a port.
  ncclResult_t begin_epoch(std::string cause) noexcept;
  // New QPs on the members in `usable`, and EpochStart.
  ncclResult_t start_epoch(uint8_t usable) noexcept;
  // The receiver's answer: the QPs connected and installed, its entries taken, the messages it
  // lacks sent again, EpochGo.
  ncclResult_t on_ready(const net::EpochReady& ready) noexcept;
  // Message `seq` is complete at the receiver: its sends are done here too.
  void complete_locally(uint64_t seq) noexcept;
  // The "already complete" marker of message `seq` on QP q (kAlreadyCompleteImm).
  ncclResult_t post_marker(int q) noexcept;
  // The buffers of message lead's sends, to go through `member` (set_buffer).
  void rebind_buffers(SendRequest& lead, uint8_t member) noexcept;
  // The stall checks of a health check (connected_comm.h).
  ncclResult_t check_side_health() noexcept override;
  // Retires completion wc of the group led by `lead` (its wr_id passed names_send_group): the
  // send-queue entries its signal covers, and one of the QPs the group waits for. With the last,
  // every send of the group is Done and its profiler event stopped. The one body of both
  // completion loops, so that the protocol's bookkeeping is written once. kCommon: the fast loop
  // has found the group to be one unprofiled send carried by one QP, and what that rules out is
  // not looked at again (the stores before would make the compiler load it again); the fast loop
  // counts the send's telemetry itself, the general one's is counted here (count_done). Inline
  // (defined in send_comm.cpp), so that the fast loop keeps calling nothing.
  template <bool kCommon>
  [[gnu::always_inline]] inline void retire_send(const ibv_wc& wc, SendRequest& lead) noexcept;
  // A send is done: its telemetry (inline; what it samples or a stall it ends, out of line).
  void count_done(const SendRequest& r) noexcept {
    telemetry_.completed(r.size, r.posted_ticks, "the wait for a send's completion");
  }
  // The isend that found no clear-to-send at first has it now: the wait is recorded. Out of
  // line: most sends find their clear-to-send at once.
  [[gnu::noinline]] void cts_wait_ended(uint64_t now) noexcept;
  // NCCL_ROCE_STALL_WARN_MS reached by an isend waiting for its clear-to-send, or by the oldest
  // send waiting for its completion: a WARN.
  void check_cts_stall() noexcept;
  void check_completion_stall() noexcept;

  // Hot members first.
  const CtsEntry* ring_entries_;
  int32_t* sizes_staging_;
  uint64_t remote_sizes_addr_;
  // Per member of a virtual NIC ([0] for a port): the keys of the sizes staging area and of the
  // receiver's sizes area, which the message's member writes through.
  std::array<uint32_t, MrHandle::kMaxMembers> sizes_staging_lkeys_{};
  std::array<uint32_t, MrHandle::kMaxMembers> remote_sizes_rkeys_{};
  // Sends above this go as WRITE + zero-length WRITE WITH IMMEDIATE (adaptive routing); off:
  // UINT64_MAX, so the data path compares without a branch on the mode.
  uint64_t ar_threshold_;
  uint32_t max_inline_;
  // Every message goes on one QP (no splitting, or one QP): isend_single's condition.
  bool single_qp_messages_;
  PendingMultiRecv pending_;
  RequestPool<SendRequest, kMaxSendRequests> requests_;
  std::array<SendQueueCredits, kMaxQpsPerConnection> credits_{};
  // The request that leads the message of each sequence in flight (by ring slot), for a
  // recovery epoch's resend.
  std::array<uint16_t, kCtsRingSlots> lead_of_seq_{};
  std::array<ibv_send_wr, kMaxRecvs + 1> wrs_{};
  std::array<ibv_sge, kMaxRecvs + 1> sges_{};
  // isend_single's one WRITE WITH IMMEDIATE: its constant fields are set once.
  ibv_send_wr single_wr_{};
  ibv_sge single_sge_{};
  uint64_t cts_wait_since_ = 0;  // an isend found no clear-to-send since then; 0: none

  // Cold: the buffers the QPs' work requests point into (the destructor destroys the QPs first).
  RegisteredBuffer ring_;
  RegisteredBuffer sizes_staging_buffer_;
};

}  // namespace roce
