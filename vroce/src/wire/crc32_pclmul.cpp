// CRC-32 by carry-less multiplication (PCLMULQDQ): four 128-bit lanes are folded forward over
// 64-byte blocks, then into one lane, and the last 16 bytes of state plus the unaligned tail are
// finished with slicing-by-8 (a Barrett reduction would save a few nanoseconds per call, not
// worth a second set of constants). The folding constants come from crc32_tables.h.
#include "wire/crc32.h"
#include "wire/crc32_tables.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace vroce::wire {

#if defined(__x86_64__)

namespace {

// Below this size the setup and the 16-byte finish cost more than slicing-by-8 saves.
constexpr std::size_t kPclmulMinLength = 64;

__attribute__((target("pclmul"))) inline __m128i fold(__m128i lane, __m128i k) noexcept {
  return _mm_xor_si128(_mm_clmulepi64_si128(lane, k, 0x00), _mm_clmulepi64_si128(lane, k, 0x11));
}

__attribute__((target("pclmul"))) inline __m128i load(const std::uint8_t* p) noexcept {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

}  // namespace

bool crc32_pclmul_supported() noexcept {
  // May run from a static initialiser, before libgcc's own CPU probe: initialise it first.
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
  }();
  return supported;
}

__attribute__((target("pclmul"))) std::uint32_t crc32_update_pclmul(std::uint32_t state,
                                                                    const std::uint8_t* data,
                                                                    std::size_t len) noexcept {
  if (len < kPclmulMinLength) {
    return crc32_update_slicing8(state, data, len);
  }

  const __m128i k512 = _mm_set_epi64x(static_cast<long long>(detail::kFold512Hi),
                                      static_cast<long long>(detail::kFold512Lo));
  const __m128i k128 = _mm_set_epi64x(static_cast<long long>(detail::kFold128Hi),
                                      static_cast<long long>(detail::kFold128Lo));

  // The running state enters as an xor into the first 32 message bits.
  __m128i x0 = _mm_xor_si128(load(data), _mm_cvtsi32_si128(static_cast<int>(state)));
  __m128i x1 = load(data + 16);
  __m128i x2 = load(data + 32);
  __m128i x3 = load(data + 48);
  data += 64;
  len -= 64;

  while (len >= 64) {
    x0 = _mm_xor_si128(fold(x0, k512), load(data));
    x1 = _mm_xor_si128(fold(x1, k512), load(data + 16));
    x2 = _mm_xor_si128(fold(x2, k512), load(data + 32));
    x3 = _mm_xor_si128(fold(x3, k512), load(data + 48));
    data += 64;
    len -= 64;
  }

  __m128i x = _mm_xor_si128(fold(x0, k128), x1);
  x = _mm_xor_si128(fold(x, k128), x2);
  x = _mm_xor_si128(fold(x, k128), x3);
  while (len >= 16) {
    x = _mm_xor_si128(fold(x, k128), load(data));
    data += 16;
    len -= 16;
  }

  // x is congruent to everything consumed so far (state included), aligned to its end, so its
  // CRC from a zero state, continued over the tail, is the CRC of the whole input.
  std::uint8_t folded[16];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(folded), x);
  const std::uint32_t crc = crc32_update_slicing8(0, folded, sizeof folded);
  return crc32_update_slicing8(crc, data, len);
}

#else  // not x86-64: no PCLMULQDQ; the dispatcher never selects this path.

bool crc32_pclmul_supported() noexcept {
  return false;
}

std::uint32_t crc32_update_pclmul(std::uint32_t state, const std::uint8_t* data,
                                  std::size_t len) noexcept {
  return crc32_update_slicing8(state, data, len);
}

#endif

}  // namespace vroce::wire
