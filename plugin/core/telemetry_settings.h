// The telemetry settings a new comm takes from the configuration.
#pragma once

#include <cstdint>

#include "telemetry/connection_telemetry.h"
#include "util/config.h"

namespace roce {

inline telemetry::TelemetrySettings telemetry_settings() {
  const Config& c = config();
  return {c.stats_summary, static_cast<uint64_t>(c.stall_warn_ms),
          static_cast<uint32_t>(c.stats_sample)};
}

}  // namespace roce
