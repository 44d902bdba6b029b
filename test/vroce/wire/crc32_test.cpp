// The three CRC-32 implementations against each other and against the standard check value,
// on every length 0..4200 from unaligned starts, and incrementally.
#include "wire/crc32.h"

#include <catch2/catch.hpp>
#include <string_view>

#include "test_util.h"
#include "wire/crc32_tables.h"

using namespace vroce::wire;

namespace {

std::uint32_t bitwise(const std::uint8_t* p, std::size_t n) {
  return crc32_final(crc32_update_bitwise(kCrc32Init, p, n));
}

}  // namespace

TEST_CASE("crc32: the standard check value of \"123456789\" is 0xCBF43926", "[wire][crc]") {
  constexpr std::string_view kCheck = "123456789";
  const auto* p = reinterpret_cast<const std::uint8_t*>(kCheck.data());
  CHECK(bitwise(p, kCheck.size()) == 0xCBF43926u);
  CHECK(crc32_final(crc32_update_slicing8(kCrc32Init, p, kCheck.size())) == 0xCBF43926u);
  CHECK(crc32(std::span(p, kCheck.size())) == 0xCBF43926u);
  // zlib.crc32(b"") == 0 and zlib.crc32(bytes(64)) == 0x758D6336 (python3, one-off).
  CHECK(crc32({}) == 0u);
  const std::vector<std::uint8_t> zeros(64, 0);
  CHECK(crc32(zeros) == 0x758D6336u);
}

TEST_CASE("crc32: slicing-by-8 equals the bitwise reference for every length 0..4200",
          "[wire][crc]") {
  const auto buf = test::random_bytes(4200 + 16, 1);
  for (const std::size_t offset : {0u, 3u}) {
    for (std::size_t len = 0; len <= 4200; ++len) {
      const std::uint8_t* p = buf.data() + offset;
      const std::uint32_t want = crc32_update_bitwise(0x12345678u, p, len);
      const std::uint32_t got = crc32_update_slicing8(0x12345678u, p, len);
      if (got != want) {
        FAIL("slicing-by-8 differs at offset " << offset << " length " << len);
      }
    }
  }
  SUCCEED();
}

TEST_CASE("crc32: PCLMULQDQ folding equals the reference for every length 0..4200", "[wire][crc]") {
  if (!crc32_pclmul_supported()) {
    WARN("this CPU has no PCLMULQDQ; the folding path cannot be exercised here");
    return;
  }
  const auto buf = test::random_bytes(4200 + 16, 2);
  // Two starts against the bitwise definition; two more, and other initial states (the state
  // enters the folding as an xor), against slicing-by-8, which the test above ties to it.
  for (const std::size_t offset : {0u, 1u, 5u, 15u}) {
    const bool bitwise_reference = offset == 0 || offset == 5;
    for (std::size_t len = 0; len <= 4200; ++len) {
      const std::uint8_t* p = buf.data() + offset;
      for (const std::uint32_t init : {kCrc32Init, 0u, 0xDEADBEEFu}) {
        const std::uint32_t want = bitwise_reference && init == kCrc32Init
                                       ? crc32_update_bitwise(init, p, len)
                                       : crc32_update_slicing8(init, p, len);
        const std::uint32_t got = crc32_update_pclmul(init, p, len);
        if (got != want) {
          FAIL("pclmul differs at offset " << offset << " length " << len << " init " << init);
        }
      }
    }
  }
  SUCCEED();
}

TEST_CASE("crc32: the dispatcher uses the PCLMULQDQ path when the CPU has it", "[wire][crc]") {
  CHECK(crc32_implementation() == (crc32_pclmul_supported() ? "pclmul" : "slicing-by-8"));
  const auto buf = test::random_bytes(3000, 3);
  CHECK(crc32(buf) == bitwise(buf.data(), buf.size()));
}

TEST_CASE("crc32: incremental updates over any split equal one pass", "[wire][crc]") {
  const auto buf = test::random_bytes(4096 + 64, 4);
  const std::uint32_t whole = bitwise(buf.data(), buf.size());
  for (std::size_t cut : {0u, 1u, 12u, 63u, 64u, 65u, 100u, 4095u, 4159u, 4160u}) {
    std::uint32_t s = crc32_update(kCrc32Init, buf.data(), cut);
    s = crc32_update(s, buf.data() + cut, buf.size() - cut);
    CHECK(crc32_final(s) == whole);
  }
  // Many small pieces (an iovec of SGEs).
  std::uint32_t s = kCrc32Init;
  std::size_t off = 0;
  for (std::size_t piece = 1; off < buf.size(); piece = piece * 3 % 97 + 1) {
    const std::size_t n = std::min(piece, buf.size() - off);
    s = crc32_update(s, buf.data() + off, n);
    off += n;
  }
  CHECK(crc32_final(s) == whole);
}

TEST_CASE("crc32: the folding constants are x^n mod P as derived", "[wire][crc]") {
  // x^32 mod P is P's low 32 bits; below degree 32, x^n mod P is x^n itself.
  STATIC_REQUIRE(detail::xpow_mod_p(32) == 0x04C11DB7u);
  STATIC_REQUIRE(detail::xpow_mod_p(31) == 0x80000000u);
  STATIC_REQUIRE(detail::xpow_mod_p(0) == 1u);
  // x^33 mod P = x * (x^32 mod P) with the top bit of 0x04C11DB7 clear: a plain shift.
  STATIC_REQUIRE(detail::xpow_mod_p(33) == (0x04C11DB7u << 1));
  // fold_constant places x^(distance - 1) mod P reflected in the top 32 bits of a qword.
  STATIC_REQUIRE(detail::fold_constant(32) == (std::uint64_t{1} << 32));  // x^31 -> bit 32
  STATIC_REQUIRE((detail::kFold512Lo & 0xFFFFFFFFull) == 0);
  STATIC_REQUIRE((detail::kFold128Hi & 0xFFFFFFFFull) == 0);
}
