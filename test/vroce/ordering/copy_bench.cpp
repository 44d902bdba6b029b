// vroce_ordered_copy_bench: what the ordered copy costs against memcpy, the copy it replaced, in
// the same run. Copies packet payloads (64 B .. one 4096-byte MTU) one after the other into a
// destination of 1 MiB (one RDMA WRITE's worth, cache-resident) and of 64 MiB (streaming to
// memory), as the responder places them, and prints GB/s for both and the ratio. Best of 5
// repetitions per cell, to shed the noise of a shared machine. Label "bench": numbers, no
// assertions.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/ordered_copy.h"

namespace {

using Clock = std::chrono::steady_clock;

// Keeps the copies from being optimised away or merged across calls.
void (*volatile use_memcpy)(void*, const void*, size_t) = [](void* d, const void* s, size_t n) {
  std::memcpy(d, s, n);
};
void (*volatile use_ordered)(void*, const void*, size_t) = vroce::core::ordered_copy;

double gbps(void (*copy)(void*, const void*, size_t), uint8_t* dst, size_t region,
            const uint8_t* src, size_t piece) {
  const size_t total = std::max<size_t>(region, 256u << 20);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = Clock::now();
    size_t done = 0;
    while (done < total) {
      for (size_t at = 0; at + piece <= region; at += piece) {
        copy(dst + at, src + (at & 0xFFFF), piece);
      }
      done += region - region % piece;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, static_cast<double>(done) / seconds / 1e9);
  }
  return best;
}

}  // namespace

int main() {
  std::vector<uint8_t> src((64u << 10) + 4096);
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<uint8_t>(i * 7 + 1);
  }
  std::printf("vroce payload placement: memcpy (before) vs ordered_copy (after), best of 5\n\n");
  std::printf("%-12s %-9s %14s %18s %8s\n", "destination", "payload", "memcpy GB/s",
              "ordered_copy GB/s", "ratio");
  for (size_t region : {size_t{1} << 20, size_t{64} << 20}) {
    std::vector<uint8_t> dst(region);
    for (size_t piece : {size_t{64}, size_t{256}, size_t{1024}, size_t{4096}}) {
      const double before = gbps(use_memcpy, dst.data(), region, src.data(), piece);
      const double after = gbps(use_ordered, dst.data(), region, src.data(), piece);
      std::printf("%-12s %-9zu %14.2f %18.2f %8.2f\n", region == (1u << 20) ? "1 MiB" : "64 MiB",
                  piece, before, after, after / before);
    }
  }
  return 0;
}
