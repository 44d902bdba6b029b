// What a send or recv comm carries for telemetry: its statistics (registered with the stats
// registry for as long as the comm lives, summarised at close when NCCL_ROCE_STATS=1, with the
// port's fabric counters since init) and its
// stall watch. Stall reports are WARN lines of one shape for both directions: which comm and
// peer, what it waits for, for how long, and what to look at.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "telemetry/comm_stats.h"
#include "telemetry/fabric_counters.h"
#include "telemetry/stall_watch.h"

namespace roce::telemetry {

struct TelemetrySettings {
  bool summary_at_close = false;  // NCCL_ROCE_STATS
  uint64_t stall_warn_ms = 0;     // NCCL_ROCE_STALL_WARN_MS
  uint32_t sample_every = 1;      // NCCL_ROCE_STATS_SAMPLE
};

class ConnectionTelemetry {
 public:
  // `fabric`: the comm's port counters, whose increases since init the close-time summary
  // reports (nullptr: none).
  ConnectionTelemetry(CommIdentity identity, const TelemetrySettings& settings,
                      std::shared_ptr<const FabricCounterWatch> fabric = nullptr);
  ~ConnectionTelemetry();
  ConnectionTelemetry(const ConnectionTelemetry&) = delete;
  ConnectionTelemetry& operator=(const ConnectionTelemetry&) = delete;

  CommStats& stats() noexcept { return stats_; }
  StallWatch& stall() noexcept { return stall_; }

  // "send comm on mlx5_0 to 10.0.0.2: <waiting> for 5012 ms; <advice>" (WARN, NET).
  void warn_stall(std::string_view waiting, uint64_t waited_ms, std::string_view advice) noexcept;
  // The wait that began at `since` is over at `now` (now_ticks() values): if it had been
  // reported as a stall, says so (INFO, NET), `waiting` naming it.
  void wait_ended(std::string_view waiting, uint64_t since, uint64_t now) noexcept;

  // The data path's one call per completed request: `bytes` carried by a request posted at
  // `posted` (a now_ticks() value). The clock is read only for a sampled request and when that
  // request's wait had been reported as a stall, whose end is then logged, `waiting` naming it.
  // Inline, with the logging out of line.
  void completed(uint64_t bytes, uint64_t posted, std::string_view waiting) noexcept {
    const bool sampled = stats_.count(bytes);
    if (sampled || stall_.reported()) [[unlikely]] {
      completed_rarely(sampled, posted, waiting);
    }
  }

  // completed() of the next request would only count it: it is not sampled and no stall is
  // open. The data path's completion loops then take it without a call (completed_quietly).
  bool next_completion_quiet() const noexcept {
    return !stats_.next_count_samples() && !stall_.reported();
  }
  // completed() for a request next_completion_quiet() said yes to.
  void completed_quietly(uint64_t bytes) noexcept { stats_.count(bytes); }

 private:
  // completed() for a sampled request, or while a reported stall is open.
  [[gnu::noinline]] void completed_rarely(bool sampled, uint64_t posted,
                                          std::string_view waiting) noexcept;

  CommStats stats_;
  StallWatch stall_;
  bool summary_at_close_;
  std::shared_ptr<const FabricCounterWatch> fabric_;
};

}  // namespace roce::telemetry
