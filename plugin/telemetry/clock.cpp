// TSC calibration.
#include "telemetry/clock.h"

#include <fstream>
#include <string>

namespace roce::telemetry {
namespace clock_detail {
bool use_tsc = false;
}

namespace {

bool invariant_tsc() {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
  }
#endif
  return false;
}

double calibrate() {
#if defined(__x86_64__)
  if (invariant_tsc()) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const uint64_t c0 = __rdtsc();
    // Both clocks over the same interval: preemption in between stretches both alike.
    while (Clock::now() - t0 < std::chrono::milliseconds(2)) {
    }
    const auto t1 = Clock::now();
    const uint64_t c1 = __rdtsc();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    if (c1 > c0 && ns > 0) {
      clock_detail::use_tsc = true;
      return ns / static_cast<double>(c1 - c0);
    }
  }
#endif
  return 1.0;
}

}  // namespace

double ns_per_tick() noexcept {
  static const double scale = calibrate();
  return scale;
}

}  // namespace roce::telemetry
