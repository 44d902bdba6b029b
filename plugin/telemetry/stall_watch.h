// Deciding when a comm should report a stall: a request (or an isend waiting for its
// clear-to-send) outstanding longer than NCCL_ROCE_STALL_WARN_MS. The data path asks due() on
// every poll that found nothing, which reads the clock only every 256th time; warn_after()
// then says whether to warn now: first at the threshold, then each time the wait has doubled, so
// a stalled job logs a handful of lines per comm rather than a flood. Pure, unit-tested.
#pragma once

#include <cstdint>
#include <optional>

namespace roce::telemetry {

class StallWatch {
 public:
  explicit StallWatch(uint64_t threshold_ms) noexcept : threshold_ns_(threshold_ms * 1'000'000) {}

  bool enabled() const noexcept { return threshold_ns_ != 0; }
  bool due() noexcept { return enabled() && (++polls_ & 255U) == 0; }

  // The wait that began at since_ns, seen at now_ns: the milliseconds waited when a warning is
  // due now, else nullopt. A new wait (another since_ns) starts the schedule again.
  std::optional<uint64_t> warn_after(uint64_t since_ns, uint64_t now_ns) noexcept {
    if (since_ns != since_ns_) {
      since_ns_ = since_ns;
      next_ns_ = threshold_ns_;
      warned_ = false;
    }
    const uint64_t waited = now_ns > since_ns ? now_ns - since_ns : 0;
    if (waited < next_ns_) {
      return std::nullopt;
    }
    while (next_ns_ <= waited) {
      next_ns_ *= 2;
    }
    warned_ = true;
    return waited / 1'000'000;
  }

  // The wait that began at since_ns is over: true when it had been reported (so the comm can
  // say it recovered).
  bool ended(uint64_t since_ns) noexcept {
    const bool reported = warned_ && since_ns == since_ns_;
    if (since_ns == since_ns_) {
      warned_ = false;
      since_ns_ = 0;
    }
    return reported;
  }

 private:
  uint64_t threshold_ns_;
  uint32_t polls_ = 0;
  uint64_t since_ns_ = 0;
  uint64_t next_ns_ = 0;
  bool warned_ = false;
};

}  // namespace roce::telemetry
