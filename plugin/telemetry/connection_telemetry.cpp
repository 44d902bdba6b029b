// A comm's telemetry: registration, close-time summary, stall lines.
#include "telemetry/connection_telemetry.h"

#include "telemetry/stats_registry.h"
#include "util/cancellation.h"
#include "util/log.h"

namespace roce::telemetry {
namespace {

const char* direction_text(const CommIdentity& id) {
  return id.direction == Direction::Send ? "send comm" : "recv comm";
}

const char* peer_word(const CommIdentity& id) {
  return id.direction == Direction::Send ? "to" : "from";
}

}  // namespace

ConnectionTelemetry::ConnectionTelemetry(CommIdentity identity, const TelemetrySettings& settings,
                                         std::shared_ptr<const FabricCounterWatch> fabric)
    : stats_(std::move(identity), settings.sample_every),
      stall_(settings.stall_warn_ms, 1e6 / ns_per_tick()),
      summary_at_close_(settings.summary_at_close),
      fabric_(std::move(fabric)) {
  StatsRegistry::instance().add(&stats_);
}

ConnectionTelemetry::~ConnectionTelemetry() {
  // The summary reads the port's counters from sysfs, a cancellation point, in a destructor (no
  // exception may leave it) that can run outside an entry point's guard.
  const CancellationHeldOff held_off;
  try {
    const CommStatsSnapshot last = StatsRegistry::instance().remove(&stats_);
    if (summary_at_close_) {
      const std::string fabric = fabric_ != nullptr ? fabric_->report_since_init() : "";
      ROCE_INFO(NCCL_NET, "{}{}{}", summary_line(last), fabric.empty() ? "" : "; ", fabric);
    }
  } catch (...) {
    // A failed summary must not turn a close into a crash.
  }
}

void ConnectionTelemetry::warn_stall(std::string_view waiting, uint64_t waited_ms,
                                     std::string_view advice) noexcept {
  stats_.stall_reported();
  const CommIdentity& id = stats_.identity();
  ROCE_WARN(NCCL_NET,
            "{} on {} {} {}: {} for {} ms; {} (NCCL_ROCE_STALL_WARN_MS sets when this "
            "is reported; it repeats each time the wait doubles)",
            direction_text(id), id.device, peer_word(id), id.peer, waiting, waited_ms, advice);
}

void ConnectionTelemetry::wait_ended(std::string_view waiting, uint64_t since,
                                     uint64_t now) noexcept {
  if (!stall_.ended(since)) {
    return;
  }
  const uint64_t waited_ms = ms_from_ticks(now > since ? now - since : 0);
  const CommIdentity& id = stats_.identity();
  ROCE_INFO(NCCL_NET, "{} on {} {} {}: {} ended after about {} ms", direction_text(id), id.device,
            peer_word(id), id.peer, waiting, waited_ms);
}

void ConnectionTelemetry::completed_rarely(bool sampled, uint64_t posted,
                                           std::string_view waiting) noexcept {
  const uint64_t now = now_ticks();
  if (sampled) {
    stats_.sample(posted, now);
  }
  wait_ended(waiting, posted, now);
}

}  // namespace roce::telemetry
