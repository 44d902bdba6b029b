// A latency histogram cheap enough to be always on: recording is one bit scan, one shift and one
// add, into buckets four to an octave (each bucket spans at most 25% of its lower bound), of
// clock ticks (telemetry/clock.h) up to 2^40; a snapshot carries the tick length in ns. One thread
// records (the thread that drives the comm, as NCCL's proxy does); any thread may read a snapshot
// at any time: every bucket is a relaxed atomic, so a reader never sees a torn count, only one that
// is a few samples behind.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace roce::telemetry {

class LatencyHistogram {
 public:
  // Every 64-bit value has a bucket (the largest, 2^64 - 1, falls in 4 * 62 + 3), so recording
  // needs no clamp.
  static constexpr int kBuckets = 4 * 62 + 4;

  static constexpr int bucket_of(uint64_t ns) noexcept {
    if (ns < 4) {
      return static_cast<int>(ns);
    }
    const int msb = 63 - std::countl_zero(ns);
    const int index = 4 * (msb - 1) + static_cast<int>((ns >> (msb - 2)) & 3U);
    return index;
  }
  // The smallest value that falls in `bucket`.
  static constexpr uint64_t lower_bound(int bucket) noexcept {
    if (bucket < 4) {
      return static_cast<uint64_t>(bucket);
    }
    const int msb = bucket / 4 + 1;
    return static_cast<uint64_t>(4 + bucket % 4) << (msb - 2);
  }

  // Single writer: a plain load and store (no locked instruction) is enough.
  void record(uint64_t units) noexcept {
    auto& b = buckets_[static_cast<std::size_t>(bucket_of(units))];
    b.store(b.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  struct Snapshot {
    std::array<uint64_t, kBuckets> counts{};
    double ns_per_unit = 1.0;  // what one recorded unit is worth
    uint64_t total() const noexcept;
    // The q-th percentile (0 < q <= 100), as the midpoint of the bucket holding it; 0 when
    // empty. Good to 12.5% either way.
    double percentile_ns(double q) const noexcept;
  };
  Snapshot snapshot(double ns_per_unit = 1.0) const noexcept {
    Snapshot s;
    s.ns_per_unit = ns_per_unit;
    for (int i = 0; i < kBuckets; ++i) {
      s.counts[static_cast<std::size_t>(i)] =
          buckets_[static_cast<std::size_t>(i)].load(std::memory_order_relaxed);
    }
    return s;
  }

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
};

}  // namespace roce::telemetry
