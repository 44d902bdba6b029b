// TSC calibration.
#include "telemetry/clock.h"

#include <fstream>
#include <string>

#include "util/log.h"

namespace roce::telemetry {
namespace {

bool read_invariant_tsc() {
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

struct Calibration {
  double ns_per_tick = 1.0;
  bool invariant = false;
};

Calibration calibrate() {
  Calibration c;
#if defined(__x86_64__)
  c.invariant = read_invariant_tsc();
  using Clock = std::chrono::steady_clock;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto t0 = Clock::now();
    const uint64_t c0 = __rdtsc();
    // Both clocks over the same interval: preemption in between stretches both alike.
    while (Clock::now() - t0 < std::chrono::milliseconds(2)) {
    }
    const auto t1 = Clock::now();
    const uint64_t c1 = __rdtsc();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    if (c1 > c0 && ns > 0) {
      c.ns_per_tick = ns / static_cast<double>(c1 - c0);
      break;
    }
  }
  if (!c.invariant) {
    ROCE_INFO(NCCL_NET,
              "the CPU does not report an invariant TSC (constant_tsc and nonstop_tsc are not "
              "both in /proc/cpuinfo): the comms' latency figures and stall times use a tick "
              "rate measured once ({:.3f} ns per tick) and are approximate if it changes",
              c.ns_per_tick);
  }
#endif
  return c;
}

const Calibration& calibration() noexcept {
  static const Calibration c = calibrate();
  return c;
}

}  // namespace

double ns_per_tick() noexcept {
  return calibration().ns_per_tick;
}

bool tsc_invariant() noexcept {
  return calibration().invariant;
}

}  // namespace roce::telemetry
