// Compile-time tables shared by the CRC-32 implementations: the slicing-by-8 lookup tables and
// the PCLMULQDQ folding constants, both derived here from the polynomial rather than copied.
#pragma once

#include <array>
#include <cstdint>

#include "wire/crc32.h"

namespace vroce::wire::detail {

// Table k maps a byte to the CRC contribution of that byte followed by k zero bytes.
constexpr std::array<std::array<std::uint32_t, 256>, 8> make_slicing_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int b = 0; b < 8; ++b) {
      c = (c & 1u) ? (c >> 1) ^ kCrc32PolyReflected : c >> 1;
    }
    t[0][i] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::uint32_t i = 0; i < 256; ++i) {
      t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    }
  }
  return t;
}

inline constexpr auto kSlicingTables = make_slicing_tables();
static_assert(kSlicingTables[0][1] == 0x77073096u, "CRC-32 table entry 1 (zlib's table)");
static_assert(kSlicingTables[0][255] == 0x2D02EF8Du, "CRC-32 table entry 255 (zlib's table)");

// x^n mod P(x), P = x^32 + 0x04C11DB7, in normal bit order (bit d = coefficient of x^d).
constexpr std::uint32_t xpow_mod_p(unsigned n) {
  std::uint64_t r = 1;
  for (unsigned i = 0; i < n; ++i) {
    r <<= 1;
    if (r & (std::uint64_t{1} << 32)) {
      r ^= 0x104C11DB7ull;
    }
  }
  return static_cast<std::uint32_t>(r);
}

// A folding multiplier for PCLMULQDQ over reflected data. With data loaded little-endian, bit i of
// a 64-bit lane is the coefficient of x^(63-i) of that lane, so a polynomial K of degree < 32 is
// placed with the coefficient of x^d at bit 63-d. The carry-less product of two such lanes reads
// as (a * b * x) in the 128-bit reflected frame, so the exponent is one less than the distance.
constexpr std::uint64_t fold_constant(unsigned distance_bits) {
  const std::uint32_t k = xpow_mod_p(distance_bits - 1);
  std::uint64_t r = 0;
  for (unsigned d = 0; d < 32; ++d) {
    if (k & (1u << d)) {
      r |= std::uint64_t{1} << (63 - d);
    }
  }
  return r;
}

// Folding a 128-bit lane forward by D bits: its high-degree half (the low qword) moves by D+64,
// its low-degree half (the high qword) by D.
inline constexpr std::uint64_t kFold512Lo = fold_constant(512 + 64);
inline constexpr std::uint64_t kFold512Hi = fold_constant(512);
inline constexpr std::uint64_t kFold128Lo = fold_constant(128 + 64);
inline constexpr std::uint64_t kFold128Hi = fold_constant(128);

}  // namespace vroce::wire::detail
