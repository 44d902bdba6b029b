// ordered_copy's results, independent of threads: every size up to a few packets' worth, at
// every alignment of source and destination, writes exactly the source bytes and nothing around
// them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/ordered_copy.h"

namespace {
// Every destination alignment relative to the 8-byte word and the 16-byte piece; the sanitizer
// builds, which check every access, take the boundary cases only.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr size_t kDestinationOffsets[] = {0, 1, 7, 8, 9, 15};
#else
constexpr size_t kDestinationOffsets[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
#endif
}  // namespace

TEST_CASE("ordered_copy copies every size and alignment exactly, touching nothing around it",
          "[copy]") {
  constexpr size_t kGuard = 64;
  std::vector<uint8_t> src(9000 + 2 * kGuard);
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  std::vector<uint8_t> dst(src.size() + 16);  // room for the largest copy at offset 15 + guard
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 200; ++n) {
    sizes.push_back(n);
  }
  for (size_t n : {255u, 256u, 257u, 1023u, 4088u, 4096u, 4100u, 8999u, 9000u}) {
    sizes.push_back(n);
  }
  for (size_t n : sizes) {
    for (size_t dst_off : kDestinationOffsets) {
      for (size_t src_off : {size_t{0}, size_t{3}, size_t{8}, size_t{13}}) {
        const size_t window = 2 * kGuard + dst_off + n;  // what the checks below look at
        std::memset(dst.data(), 0xEE, window);
        vroce::core::ordered_copy(dst.data() + kGuard + dst_off, src.data() + kGuard + src_off, n);
        INFO("size " << n << ", destination offset " << dst_off << ", source offset " << src_off);
        REQUIRE(std::memcmp(dst.data() + kGuard + dst_off, src.data() + kGuard + src_off, n) == 0);
        const auto untouched = [](auto first, auto last) {
          return std::all_of(first, last, [](uint8_t b) { return b == 0xEE; });
        };
        REQUIRE(
            untouched(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(kGuard + dst_off)));
        REQUIRE(untouched(dst.begin() + static_cast<std::ptrdiff_t>(kGuard + dst_off + n),
                          dst.begin() + static_cast<std::ptrdiff_t>(window)));
      }
    }
  }
}
