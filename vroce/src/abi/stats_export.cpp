// vroce's counters for tests and operators, exported under VROCE_PRIVATE_1.0 (not a verbs API).
#include "abi/stats_export.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "abi/export.h"
#include "stats/stats.h"

VROCE_EXPORT int vroce_stats_json(char* buf, size_t len) {
  std::string json = vroce::stats_json();
  if (buf != nullptr && len > 0) {
    size_t n = std::min(json.size(), len - 1);
    std::memcpy(buf, json.data(), n);
    buf[n] = '\0';
  }
  return static_cast<int>(json.size());
}

VROCE_EXPORT void vroce_stats_reset(void) {
  vroce::stats_reset();
}
