// Percentiles of latency samples (nearest-rank, as perftest and nccl-tests' -I report them).
#pragma once

#include <vector>

namespace roce::bench {

struct Percentiles {
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
};

// Sorts a copy of the samples. Empty input gives all zeros.
Percentiles percentiles(std::vector<double> samples);

// The nearest-rank percentile q (0 < q <= 100) of sorted samples.
double nearest_rank(const std::vector<double>& sorted, double q);

}  // namespace roce::bench
