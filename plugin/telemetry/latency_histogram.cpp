// Percentiles of a latency histogram snapshot.
#include "telemetry/latency_histogram.h"

#include <cmath>

namespace roce::telemetry {

uint64_t LatencyHistogram::Snapshot::total() const noexcept {
  uint64_t sum = 0;
  for (const uint64_t c : counts) {
    sum += c;
  }
  return sum;
}

double LatencyHistogram::Snapshot::percentile_ns(double q) const noexcept {
  const uint64_t n = total();
  if (n == 0) {
    return 0;
  }
  // Nearest rank, as roce-bench and perftest report percentiles.
  const auto rank = static_cast<uint64_t>(std::ceil(q / 100.0 * static_cast<double>(n)));
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts[static_cast<std::size_t>(i)];
    if (seen >= (rank == 0 ? 1 : rank)) {
      const double low = static_cast<double>(lower_bound(i));
      const double high = i + 1 < kBuckets ? static_cast<double>(lower_bound(i + 1)) : low;
      return (i < 4 ? low : (low + high) / 2) * ns_per_unit;
    }
  }
  return static_cast<double>(lower_bound(kBuckets - 1)) * ns_per_unit;
}

}  // namespace roce::telemetry
