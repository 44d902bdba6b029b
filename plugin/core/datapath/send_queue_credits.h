// Send-queue accounting for one QP. Most of the plugin's work requests are unsignaled (data
// WRITEs, CTS WRITEs); an unsignaled WR keeps its send-queue entry until a later signaled WR of the
// same QP completes, so the poster must (a) never post more than the queue holds and (b) signal
// often enough that entries come back. Positions are 32-bit counters compared by wrapping
// difference. Pure: unit-tested without a device.
#pragma once

#include <cstdint>

namespace roce {

class SendQueueCredits {
 public:
  // depth: the QP's max_send_wr; signal_interval: the longest run of unsignaled WRs allowed.
  constexpr SendQueueCredits(uint32_t depth = 0, uint32_t signal_interval = 1) noexcept
      : depth_(depth), signal_interval_(signal_interval == 0 ? 1 : signal_interval) {}

  constexpr bool can_post(uint32_t count) const noexcept { return outstanding() + count <= depth_; }

  // Accounts one WR; returns its position (what a signaled WR carries in its wr_id).
  constexpr uint32_t post() noexcept { return ++posted_; }

  // Whether the WR about to be posted should be signaled to keep entries flowing back: true when
  // `signal_interval` unsignaled WRs would otherwise be outstanding since the last signaled one.
  constexpr bool should_signal() const noexcept {
    return posted_ + 1 - last_signaled_ >= signal_interval_;
  }
  constexpr void signaled_at(uint32_t position) noexcept { last_signaled_ = position; }

  // A signaled WR at `position` completed: it and every WR posted before it are retired.
  constexpr void retire(uint32_t position) noexcept {
    if (static_cast<int32_t>(position - retired_) > 0) {
      retired_ = position;
    }
  }

  constexpr uint32_t outstanding() const noexcept { return posted_ - retired_; }
  constexpr uint32_t depth() const noexcept { return depth_; }

 private:
  uint32_t depth_;
  uint32_t signal_interval_;
  uint32_t posted_ = 0;
  uint32_t retired_ = 0;
  uint32_t last_signaled_ = 0;
};

}  // namespace roce
