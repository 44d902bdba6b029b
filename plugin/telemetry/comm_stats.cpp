// Comm statistics: snapshots and the close-time summary.
#include "telemetry/comm_stats.h"

#include <fmt/format.h>

namespace roce::telemetry {
namespace {

std::atomic<uint64_t> next_id{1};

std::string micros(double ns) {
  return fmt::format("{:.1f} us", ns / 1e3);
}

std::string bytes_text(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) {
    return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30));
  }
  if (bytes >= (uint64_t{1} << 20)) {
    return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
  }
  return fmt::format("{} B", bytes);
}

}  // namespace

CommStats::CommStats(CommIdentity identity, uint32_t sample_every)
    : id_(next_id.fetch_add(1, std::memory_order_relaxed)),
      identity_(std::move(identity)),
      created_ticks_((ns_per_tick(), now_ticks())),
      sample_every_(sample_every == 0 ? 1 : sample_every) {}

CommStatsSnapshot CommStats::snapshot(bool closed) const {
  CommStatsSnapshot s;
  s.id = id_;
  s.identity = identity_;
  const double scale = ns_per_tick();
  s.age_s = static_cast<double>(now_ticks() - created_ticks_) * scale / 1e9;
  s.closed = closed;
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.errors = errors_.load(std::memory_order_relaxed);
  s.stalls = stalls_.load(std::memory_order_relaxed);
  s.recoveries = recoveries_.load(std::memory_order_relaxed);
  s.recovery_us = recovery_us_.load(std::memory_order_relaxed);
  s.completion = completion_.snapshot(scale);
  s.messages = messages_.load(std::memory_order_relaxed);
  s.cts_wait = cts_wait_.snapshot(scale);
  if (identity_.direction == Direction::Send) {
    const uint64_t waited = s.cts_wait.total();
    s.cts_wait.counts[0] += s.messages > waited ? s.messages - waited : 0;
  }
  return s;
}

std::string summary_line(const CommStatsSnapshot& s) {
  const bool send = s.identity.direction == Direction::Send;
  std::string line = fmt::format(
      "{} comm {} {} on {}, {} QP{}, tc {}: {} messages, {}, {} errors, {} stall warnings in "
      "{:.1f} s; completion p50 {} p99 {}",
      send ? "send" : "recv", send ? "to" : "from", s.identity.peer, s.identity.device,
      s.identity.qps, s.identity.qps == 1 ? "" : "s", s.identity.traffic_class, s.messages,
      bytes_text(s.bytes), s.errors, s.stalls, s.age_s, micros(s.completion.percentile_ns(50)),
      micros(s.completion.percentile_ns(99)));
  if (s.recoveries > 0) {
    line += fmt::format("; {} recover{} in {:.1f} ms", s.recoveries,
                        s.recoveries == 1 ? "y" : "ies", static_cast<double>(s.recovery_us) / 1e3);
  }
  if (send) {
    line += fmt::format("; clear-to-send wait p50 {} p99 {}", micros(s.cts_wait.percentile_ns(50)),
                        micros(s.cts_wait.percentile_ns(99)));
  }
  return line;
}

}  // namespace roce::telemetry
