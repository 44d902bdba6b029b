// The sizes a run visits (-b/-e/-f as nccl-tests) and how many iterations each size gets.
// Pure arithmetic, unit-tested.
#pragma once

#include <cstddef>
#include <vector>

#include "options.h"

namespace roce::bench {

inline constexpr std::size_t kElementBytes = sizeof(float);

struct SizeStep {
  std::size_t bytes;  // a multiple of kElementBytes
  int iters;
  int warmup;
};

// min, min*f, min*f^2, ... up to max, each rounded down to whole floats (at least one),
// duplicates removed. Iterations come from -n/-w when given, else scale with the size so each
// size moves a bounded amount of data (small sizes get many samples, 64 MiB a few).
std::vector<SizeStep> size_sweep(const Options& options);

// The automatic iteration counts for one size of one mode.
SizeStep auto_iterations(Mode mode, std::size_t bytes);

}  // namespace roce::bench
