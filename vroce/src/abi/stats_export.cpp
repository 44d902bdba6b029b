// vroce's counters for tests and operators, exported under VROCE_PRIVATE_1.0 (not a verbs API).
#include <cstddef>
#include <cstring>
#include <string>

#include "abi/export.h"
#include "core/stats.h"

// Writes the counters as one NUL-terminated JSON object into buf (truncated to len - 1 bytes)
// and returns the full JSON length, so a caller can retry with a larger buffer (as snprintf).
VROCE_EXPORT int vroce_stats_json(char* buf, size_t len) {
  std::string json = vroce::stats_json();
  if (buf != nullptr && len > 0) {
    size_t n = std::min(json.size(), len - 1);
    std::memcpy(buf, json.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int>(json.size());
}

// Zeroes the counters (not the live-object gauges).
VROCE_EXPORT void vroce_stats_reset(void) { vroce::stats_reset(); }
