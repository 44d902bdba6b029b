// Percentile arithmetic.
#include "stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace roce::bench {

double nearest_rank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) {
    return 0;
  }
  const double rank = std::ceil(q / 100.0 * static_cast<double>(sorted.size()));
  const auto index = static_cast<std::size_t>(std::max(rank, 1.0)) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

Percentiles percentiles(std::vector<double> samples) {
  Percentiles p;
  if (samples.empty()) {
    return p;
  }
  std::sort(samples.begin(), samples.end());
  p.p50 = nearest_rank(samples, 50);
  p.p90 = nearest_rank(samples, 90);
  p.p99 = nearest_rank(samples, 99);
  p.min = samples.front();
  p.max = samples.back();
  p.mean =
      std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return p;
}

}  // namespace roce::bench
