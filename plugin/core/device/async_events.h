// The per-device async-event thread. It waits on the context's async fd (made non-blocking) and
// on an eventfd of its own with poll(), so stop() ends it at once; each event is read with
// ibv_get_async_event, logged once (device, port or QP number, event name), recorded, and acked.
// Fatal events mark what they concern so the data path can fail instead of hanging:
// DEVICE_FATAL the device; CQ_ERR the CompletionQueue; QP_FATAL, QP_REQ_ERR and QP_ACCESS_ERR
// the QueuePair (through the cq_context/qp_context the verbs layer set). PORT_ERR and
// PORT_ACTIVE are warnings only, as in NCCL's IB transport: a link flap is ridden out by RC
// retransmission, and one longer than the retry budget reaches the connections that had traffic
// in flight through their completions (IBV_WC_RETRY_EXC_ERR: a recovery epoch, or the comm's
// failure with NCCL_ROCE_FAILOVER=0); nothing is marked, so comms opened after the link is back
// are not touched. A port event moves every monitor's checks_due() of the process, so that a
// comm on a virtual NIC (which watches its first member's monitor) sees a member come back.
// rdma-core makes ibv_destroy_qp/cq wait until events naming them are acked, so a marked object
// is alive while we mark it.
// The same thread paces the comms' health checks: checks_due() moves on with every event and,
// given a check interval, with every interval that passes. A comm's data path compares it with
// the value it last saw, one load and one compare per poll that finds nothing, and only when it
// moved looks at the fatal marks and at its stalls (NCCL_ROCE_STALL_WARN_MS).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "verbs/context.h"

namespace roce {

// True for the events that make the device, a CQ or a QP unusable (not PORT_ERR: see above).
bool is_fatal_async_event(ibv_event_type type) noexcept;
// "IBV_EVENT_PORT_ERR"; "IBV_EVENT_<n>" for values this build does not know.
std::string async_event_name(ibv_event_type type);

class AsyncEventMonitor {
 public:
  // Starts the thread. Throws verbs::VerbsError when the async fd cannot be made non-blocking
  // or the stop eventfd cannot be created.
  // `check_interval`: how often checks_due() moves without an event; zero: only with events.
  explicit AsyncEventMonitor(std::shared_ptr<verbs::Context> context,
                             std::chrono::milliseconds check_interval = {});
  ~AsyncEventMonitor();  // stop()
  AsyncEventMonitor(const AsyncEventMonitor&) = delete;
  AsyncEventMonitor& operator=(const AsyncEventMonitor&) = delete;

  // Ends the thread and waits for it; idempotent.
  void stop() noexcept;

  bool device_fatal() const noexcept { return device_fatal_.load(std::memory_order_acquire); }
  uint64_t events_seen() const noexcept { return events_seen_.load(std::memory_order_acquire); }
  uint64_t checks_due() const noexcept { return checks_due_.load(std::memory_order_acquire); }
  // The counter behind checks_due(), for a data path that reads it on every empty poll and so
  // keeps its address rather than the monitor's (one load fewer).
  const std::atomic<uint64_t>& checks_due_counter() const noexcept { return checks_due_; }
  // Moves checks_due() on from another thread (the peer watch, net/peer_watch.h, when a comm's
  // peer is gone), so every comm of the device looks at its health at its next idle poll.
  void nudge_checks() noexcept { checks_due_.fetch_add(1, std::memory_order_acq_rel); }
  // Waits until events_seen() >= count or the timeout passes; returns whether it got there.
  bool wait_for_events(uint64_t count, std::chrono::milliseconds timeout) const;

  const std::shared_ptr<verbs::Context>& context() const noexcept { return context_; }

 private:
  void run() noexcept;
  void handle(const ibv_async_event& event);

  std::shared_ptr<verbs::Context> context_;
  int stop_fd_ = -1;
  std::atomic<bool> device_fatal_{false};
  std::chrono::milliseconds check_interval_;
  std::atomic<uint64_t> events_seen_{0};
  std::atomic<uint64_t> checks_due_{0};
  std::thread thread_;
};

}  // namespace roce
