// What the sending and the receiving end of a connection share: the completion queue and the data
// QPs with their owners, the peer's name for messages, the comm's telemetry, and the three steps
// every test() takes for a request not yet done: give up on a failed comm, poll the completion
// queue, and, when the device's async-event thread says it is time, look at the comm's health
// (the fatal marks of the device, the CQ and the QPs, then the side's own stall checks).
// The two sides differ only in the words of their messages: "->" / "to" for the sender, "<-" /
// "from" for the receiver.
//
// The polling and the pacing of the health checks are inline: every test() that finds nothing
// costs them, so they cost no call of their own; every report is out of line and cold.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/datapath/comm_setup.h"
#include "core/datapath/data_path_limits.h"
#include "core/datapath/recovery_epoch.h"
#include "core/datapath/request.h"
#include "core/device/async_events.h"
#include "net/peer_watch.h"
#include "telemetry/connection_telemetry.h"
#include "verbs/completion_queue.h"
#include "verbs/queue_pair.h"

namespace roce {

class ConnectedComm : public Comm {
 public:
  ~ConnectedComm() override;

  int qp_count() const noexcept { return nqps_; }
  // The comm's devices: its port, or the members of its virtual NIC (member 0 is device()).
  const std::vector<std::shared_ptr<DeviceRuntime>>& members() const noexcept { return members_; }
  // The plugin's device number NCCL named (a port's or a virtual NIC's): memory handles carry
  // it, so one registered for another device is refused.
  int device_id() const noexcept { return device_id_; }
  int traffic_class() const noexcept { return traffic_class_; }
  const std::string& peer() const noexcept { return peer_; }

  // Data QP q (0 .. qp_count() - 1) and the CQ, for the hardening suite's hostile sender, which
  // posts on a connected comm's QP outside the protocol. The data path never hands them out.
  verbs::QueuePair& data_qp(int q) const noexcept { return *qp_ptrs_[static_cast<size_t>(q)]; }
  verbs::CompletionQueue& completion_queue() const noexcept { return *cq_; }

 protected:
  ConnectedComm(CommKind kind, std::shared_ptr<DeviceRuntime> device, ConnectionSetup setup);

  // test()'s step for a request not yet Done: one poll, `handle(got)` (the side's on_completions)
  // for what it found, and the health check while the request is still not Done. True when the
  // request is Done now; else false with *result ncclSuccess (not done yet) or the comm's
  // failure, counted in its telemetry. A poll that found nothing changed no request, so only
  // one that found something looks at it again; and the answer says which, so that test() does
  // not look at the request a second time.
  template <typename Request, typename Handle>
  [[gnu::always_inline]] bool advance(const Request& request, Handle handle,
                                      ncclResult_t* result) noexcept {
    if (failed()) [[unlikely]] {
      *result = count_failure(failure());
      return false;
    }
    if (const int got = poll_cq(); got != 0) {
      if (ncclResult_t r = handle(got); r != ncclSuccess) [[unlikely]] {
        *result = count_failure(r);
        return false;
      }
      if (request.state == RequestState::Done) {
        return true;
      }
    }
    *result = check_health();
    return false;
  }

  // One poll of the CQ: up to kPollBatch completions into wcs_; their count (0 for most polls),
  // or negative when the poll failed. Each side's on_completions() looks at them. A virtual NIC
  // has a CQ per member: poll_members() polls them all.
  int poll_cq() noexcept {
    if (more_cqs_count_ == 0) [[likely]] {
      return cq_->poll(kPollBatch, wcs_.data());
    }
    return poll_members();
  }
  [[gnu::noinline]] int poll_members() noexcept;

  // The member of a virtual NIC that QP q is on (0 for a port's QPs): QPs go member by member,
  // over the members in use (all of them, until a recovery epoch leaves one out).
  uint8_t member_of_qp(int q) const noexcept { return qp_member_[static_cast<size_t>(q)]; }

  // A side's progress(): one poll, and `handle(got)` (the side's out-of-line on_completions) only
  // when it found something or failed. Inline: most polls find nothing, and that case costs no
  // call.
  template <typename Handle>
  [[gnu::always_inline]] ncclResult_t poll_then(Handle handle) noexcept {
    const int got = poll_cq();
    if (got == 0) [[likely]] {
      return ncclSuccess;
    }
    return handle(got);
  }

  // A failed poll (poll_cq() < 0) or a completion in error: the comm's failure, recorded and
  // logged. Each side checks every completion's status as it handles it.
  [[gnu::cold, gnu::noinline]] ncclResult_t fail_poll(int got) noexcept;
  [[gnu::cold, gnu::noinline]] ncclResult_t fail_completion(const ibv_wc& wc) noexcept;
  // A successful completion whose wr_id this side never posts (a bug or corrupted memory).
  [[gnu::cold, gnu::noinline]] ncclResult_t fail_unexpected_wr_id(const ibv_wc& wc) noexcept;

  // Cheap unless the device's async-event thread has moved checks_due() since the last look (an
  // event, or another check interval gone by): then the fatal marks and the side's stalls.
  ncclResult_t check_health() noexcept {
    const uint64_t due = checks_due_->load(std::memory_order_acquire);
    if (due == checks_seen_) [[likely]] {
      return ncclSuccess;
    }
    checks_seen_ = due;
    return run_health_checks();
  }

  // The side's own part of a health check (its stalls, its other QPs); cold.
  virtual ncclResult_t check_side_health() noexcept = 0;

  // "to" or "from" the peer, for messages.
  const char* direction() const noexcept { return kind() == CommKind::Send ? "to" : "from"; }

  // Recovery epochs (recovery_epoch.h; each side's state machine is in send_recovery.cpp or
  // recv_recovery.cpp). All cold: the data path reaches them only through a failed completion or
  // a health check.
  bool recovering() const noexcept {
    return recovery_ != nullptr && recovery_->phase != EpochPhase::Normal;
  }
  // Whether a completion that failed is one an epoch recovers (RETRY_EXC or a flush of a data
  // QP, with recovery on); when recovery is off for this comm the reason is said once.
  bool can_recover(const ibv_wc& wc) noexcept;
  // The text fail_completion() would log for wc.
  std::string completion_text(const ibv_wc& wc) const;
  // Moves every data QP to ERR and drains the CQs until a marker posted behind each QP's queues
  // comes back: each successful completion found on the way is handled (absorb_fenced), so what
  // this side has completed is final. Fails the comm when a QP cannot be moved.
  ncclResult_t fence_data_qps() noexcept;
  virtual ncclResult_t absorb_fenced(const ibv_wc& wc) noexcept = 0;
  // The members (bit m: member m) whose port is ACTIVE now (ibv_query_port).
  uint8_t members_up() const noexcept;
  // The same, looked at again at most every millisecond (a wait for a port, or a rejoin, is
  // stepped at every call).
  uint8_t members_up_paced() noexcept;
  // All members' bits, and those the current QPs are on.
  uint8_t all_members_mask() const noexcept {
    return static_cast<uint8_t>((1U << member_count_) - 1U);
  }
  uint8_t lanes_mask() const noexcept;
  // Makes `qps` (on `members`, qps_per_member_ each, member by member) the comm's data QPs; the
  // old ones are destroyed.
  void install_qps(std::vector<std::unique_ptr<verbs::QueuePair>> qps,
                   const std::vector<uint8_t>& members);
  // Encodes and sends an epoch frame on the peer watch's socket; false (logged) when it cannot.
  bool send_epoch_frame(const net::EpochFrame& frame) noexcept;
  // Makes the next check_health() run the health checks again, whatever the device's counter
  // says: an epoch in progress is stepped at every test(), isend() and irecv() until it ends.
  void keep_checking() noexcept { checks_seen_ = ~checks_due_->load(std::memory_order_relaxed); }
  // The side's step of an epoch in progress, or of a frame that came; run by the health check.
  virtual ncclResult_t step_recovery() noexcept = 0;
  // The WARN at the end of an epoch, and its count in the telemetry.
  void report_recovered(const char* what, uint64_t resent, uint64_t marked) noexcept;
  // "member 1 (vroce1)" style names of the members in `mask`.
  std::string members_text(uint8_t mask) const;

  // Hot members first.
  const std::atomic<uint64_t>* checks_due_;  // the device's AsyncEventMonitor::checks_due()
  uint64_t checks_seen_ = 0;
  int nqps_;
  int more_cqs_count_;  // the members after the first (0 for a port)
  int member_count_;    // 1 for a port
  int lane_count_;      // the members the data QPs are on now (member_count_ until an epoch)
  int qps_per_member_;  // nqps_ / lane_count_
  int device_id_;
  bool split_data_;  // each message over all QPs (of its member), else on qp_of_message(seq) only
  // NCCL passed a profiler callback to init (which comes before any comm): QP events are due.
  bool profiling_;
  uint64_t next_seq_ = 1;  // the sequence of the next message (the receiver's irecv order)
  std::array<verbs::QueuePair*, kMaxQpsPerConnection> qp_ptrs_{};
  std::array<uint8_t, kMaxQpsPerConnection> qp_member_{};
  std::array<ibv_wc, kPollBatch> wcs_{};

  // Cold: the owners. Each side's destructor destroys the QPs first, before the buffers its work
  // requests point into and before the telemetry's close-time summary reads the port counters
  // (vroce publishes a QP's counts as the QP goes).
  std::shared_ptr<verbs::CompletionQueue> cq_;
  std::vector<std::shared_ptr<verbs::CompletionQueue>> more_cqs_;
  int next_member_cq_ = 0;  // where poll_members() starts, in turn, so no member's CQ waits
  std::vector<std::shared_ptr<DeviceRuntime>> members_;
  std::vector<std::unique_ptr<verbs::QueuePair>> qps_;
  // Recovery epochs (setup.enabled: whether they run for this comm; see can_recover). Declared
  // after qps_, so that an epoch's QPs not yet installed go first.
  std::unique_ptr<RecoveryState> recovery_;
  int traffic_class_;
  std::string peer_;
  telemetry::ConnectionTelemetry telemetry_;
  // The watched handshake socket (net/peer_watch.h), read by the health check only; null when
  // the watch is off. Its destruction (the comm's close) sends the peer its goodbye.
  std::unique_ptr<net::PeerWatch> peer_watch_;

 private:
  [[gnu::cold, gnu::noinline]] ncclResult_t count_failure(ncclResult_t result) noexcept;
  [[gnu::noinline]] ncclResult_t run_health_checks() noexcept;
};

}  // namespace roce
