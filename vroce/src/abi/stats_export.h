// vroce's counter hooks, exported from libibverbs.so.1 under the version node VROCE_PRIVATE_1.0.
// Not a verbs API: tests and tools declare (or dlsym) them to read what the emulated NIC did.
#pragma once

#include <cstddef>

extern "C" {

// Writes the counters as one NUL-terminated JSON object into buf (truncated to len - 1 bytes)
// and returns the full JSON length, as snprintf does, so a caller can retry with a larger buffer.
int vroce_stats_json(char* buf, size_t len);

// Zeroes the counters; the live-object gauges (PDs, MRs, CQs, QPs) are state and stay.
void vroce_stats_reset(void);

}  // extern "C"
