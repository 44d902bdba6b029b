// Size sweep and automatic iteration counts.
#include "sweep.h"

#include <algorithm>

namespace roce::bench {
namespace {

int clamp_iters(std::size_t budget_bytes, std::size_t bytes, int lo, int hi) {
  const std::size_t by_budget = budget_bytes / std::max<std::size_t>(bytes, 1);
  return static_cast<int>(std::clamp<std::size_t>(by_budget, static_cast<std::size_t>(lo),
                                                  static_cast<std::size_t>(hi)));
}

}  // namespace

SizeStep auto_iterations(Mode mode, std::size_t bytes) {
  SizeStep step{bytes, 0, 0};
  switch (mode) {
    case Mode::PingPong:
      // Latency needs many samples for stable percentiles; large sizes are bandwidth-bound.
      step.iters = clamp_iters(std::size_t{128} << 20, bytes, 20, 2000);
      step.warmup = std::max(5, step.iters / 10);
      break;
    case Mode::Bandwidth:
    case Mode::BiBandwidth:
      step.iters = clamp_iters(std::size_t{512} << 20, bytes, 16, 2000);
      step.warmup = std::max(4, step.iters / 10);
      break;
    case Mode::AllReduce:
    case Mode::Tp:
      step.iters = clamp_iters(std::size_t{256} << 20, bytes, 4, 100);
      step.warmup = std::max(1, step.iters / 10);
      break;
  }
  return step;
}

std::vector<SizeStep> size_sweep(const Options& options) {
  std::vector<SizeStep> steps;
  std::size_t size = options.min_bytes;
  while (size <= options.max_bytes) {
    const std::size_t rounded = std::max(kElementBytes, size - size % kElementBytes);
    if (steps.empty() || steps.back().bytes != rounded) {
      SizeStep step = auto_iterations(options.mode, rounded);
      if (options.iters) {
        step.iters = *options.iters;
      }
      if (options.warmup) {
        step.warmup = *options.warmup;
      }
      steps.push_back(step);
    }
    if (size > options.max_bytes / options.step_factor) {
      break;
    }
    size *= options.step_factor;
  }
  return steps;
}

}  // namespace roce::bench
