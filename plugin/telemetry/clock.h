// The clock the data path stamps requests with. On x86-64 it is rdtsc: one instruction, against
// 15-20 for steady_clock::now() through the vDSO, and the data path reads it for every request.
// Its rate is measured once per process against steady_clock (2 ms, at the first comm); where the
// TSC is not invariant (constant_tsc and nonstop_tsc missing from /proc/cpuinfo, which every
// server CPU of the last decade has, though some hypervisors hide the flags), the figures are as
// good as that measured rate, and the first comm says so at INFO. Elsewhere, ticks are
// steady_clock nanoseconds.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace roce::telemetry {

// Whether the TSC is invariant (x86-64; false elsewhere). Decided with the calibration.
bool tsc_invariant() noexcept;

inline uint64_t now_ticks() noexcept {
#if defined(ROCE_TELEMETRY_BASELINE)
  return 0;  // the hooks' cost baseline (ROCE_TELEMETRY_BASELINE, plugin/CMakeLists.txt): no clock
             // on the data path
#endif
#if defined(__x86_64__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
#endif
}

// Nanoseconds per tick; calibrates on the first call (thread-safe, 2 ms). Comm construction calls
// it, so the data path never pays for the calibration.
double ns_per_tick() noexcept;

inline uint64_t ticks_from_ms(uint64_t ms) noexcept {
  return static_cast<uint64_t>(static_cast<double>(ms) * 1e6 / ns_per_tick());
}
inline uint64_t ms_from_ticks(uint64_t ticks) noexcept {
  return static_cast<uint64_t>(static_cast<double>(ticks) * ns_per_tick() / 1e6);
}

}  // namespace roce::telemetry
