// Deciding when a comm should report a stall: a request (or an isend waiting for its
// clear-to-send) outstanding longer than NCCL_ROCE_STALL_WARN_MS. A comm asks at each of its
// health checks (paced by the device's async-event thread, core/datapath/connected_comm.h);
// warn_after() says whether to warn now: first at the threshold, then each time the wait has
// doubled, so a stalled job logs a handful of lines per comm rather than a flood. Pure,
// unit-tested.
#pragma once

#include <cstdint>
#include <optional>

namespace roce::telemetry {

class StallWatch {
 public:
  // Times are in any unit of which units_per_ms make a millisecond (clock ticks in the comms).
  StallWatch(uint64_t threshold_ms, double units_per_ms) noexcept
      : threshold_(static_cast<uint64_t>(static_cast<double>(threshold_ms) * units_per_ms)),
        units_per_ms_(units_per_ms),
        next_(threshold_) {}

  bool enabled() const noexcept { return threshold_ != 0; }

  // The wait that began at `since`, seen at `now`: the milliseconds waited when a warning is
  // due now, else nullopt. A new wait (another `since`) starts the schedule again.
  std::optional<uint64_t> warn_after(uint64_t since, uint64_t now) noexcept {
    if (!enabled()) {
      return std::nullopt;  // (and the doubling below could not end)
    }
    if (since != since_) {
      since_ = since;
      next_ = threshold_;
      warned_ = false;
    }
    const uint64_t waited = now > since ? now - since : 0;
    if (waited < next_) {
      return std::nullopt;
    }
    while (next_ <= waited) {
      next_ *= 2;
    }
    warned_ = true;
    return static_cast<uint64_t>(static_cast<double>(waited) / units_per_ms_);
  }

  // A warning has been given for a wait that has not ended yet (ended() is then worth asking).
  bool reported() const noexcept {
#if defined(ROCE_TELEMETRY_BASELINE)
    return false;
#endif
    return warned_;
  }

  // The wait that began at `since` is over: true when it had been reported (so the comm can
  // say it recovered).
  bool ended(uint64_t since) noexcept {
#if defined(ROCE_TELEMETRY_BASELINE)
    return false;
#endif
    // Every completion asks, and almost none was reported: one test then. A wait that was seen
    // but not reported needs no reset, as the next wait's `since` differs and restarts the
    // schedule in warn_after.
    if (!warned_) [[likely]] {
      return false;
    }
    if (since != since_) {
      return false;
    }
    warned_ = false;
    since_ = 0;
    return true;
  }

 private:
  uint64_t threshold_;
  double units_per_ms_;
  uint64_t since_ = 0;
  uint64_t next_;  // the wait after which the next warning is due
  bool warned_ = false;
};

}  // namespace roce::telemetry
