// fp16 and bf16 conversions: exact where the all-reduce check needs them, round to nearest even
// everywhere else, and every 16-bit pattern survives a round trip through float.
#include "dtype.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

#include "patterns.h"

using namespace roce::bench;

TEST_CASE("fp16 conversions match IEEE binary16") {
  CHECK(float_to_half(1.0F) == 0x3c00);
  CHECK(float_to_half(-2.0F) == 0xc000);
  CHECK(float_to_half(65504.0F) == 0x7bff);  // the largest half
  CHECK(float_to_half(65520.0F) == 0x7c00);  // halfway to 2^16 rounds to even: infinity
  CHECK(float_to_half(std::ldexp(1.0F, -24)) == 0x0001);  // the smallest subnormal
  CHECK(float_to_half(std::ldexp(1.0F, -26)) == 0x0000);  // below half of it: zero
  CHECK(float_to_half(0.1F) == 0x2e66);
  // Ties go to the even neighbour.
  CHECK(float_to_half(1.0F + std::ldexp(1.0F, -11)) == 0x3c00);
  CHECK(float_to_half(1.0F + 3 * std::ldexp(1.0F, -11)) == 0x3c02);
  CHECK(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(half_to_float(0x3555) == Approx(0.333251953125F));
  CHECK(half_to_float(0x0200) == std::ldexp(1.0F, -15));  // subnormal
}

TEST_CASE("every fp16 and bf16 bit pattern survives a round trip through float") {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const bool half_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (!half_nan) {
      REQUIRE(float_to_half(half_to_float(h)) == h);
    }
    const bool bf_nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
    if (!bf_nan) {
      REQUIRE(float_to_bfloat16(bfloat16_to_float(h)) == h);
    }
  }
}

TEST_CASE("bf16 conversions keep float's exponent and round to nearest even") {
  CHECK(float_to_bfloat16(1.0F) == 0x3f80);
  CHECK(float_to_bfloat16(1.0F + std::ldexp(1.0F, -8)) == 0x3f80);
  CHECK(float_to_bfloat16(1.0F + 3 * std::ldexp(1.0F, -8)) == 0x3f82);
  CHECK(bfloat16_to_float(0x4049) == 3.140625F);
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("element load and store use each type's width") {
  unsigned char buffer[8] = {};
  store_element(DType::F16, buffer, 1, 3.0F);
  CHECK(buffer[0] == 0);
  CHECK(load_element(DType::F16, buffer, 1) == 3.0F);
  store_element(DType::BF16, buffer, 3, -5.0F);
  CHECK(load_element(DType::BF16, buffer, 3) == -5.0F);
  store_element(DType::F32, buffer, 0, 7.5F);
  CHECK(load_element(DType::F32, buffer, 0) == 7.5F);
  CHECK(dtype_bytes(DType::F32) == 4);
  CHECK(dtype_bytes(DType::BF16) == 2);
  CHECK(parse_dtype("bfloat16") == DType::BF16);
  CHECK(parse_dtype("half") == DType::F16);
  CHECK_FALSE(parse_dtype("fp8").has_value());
}

TEST_CASE("all-reduce inputs stay exact in the element type for any rank count") {
  CHECK(allreduce_value_mask(DType::F32, 64) == 0x3ff);
  CHECK(allreduce_value_mask(DType::F16, 2) == 0x3ff);
  CHECK(allreduce_value_mask(DType::F16, 64) == 0x1f);
  CHECK(allreduce_value_mask(DType::BF16, 2) == 0x7f);
  CHECK(allreduce_value_mask(DType::BF16, 64) == 0x3);
  for (const DType type : {DType::F16, DType::BF16}) {
    for (const int nranks : {2, 3, 4, 8, 64}) {
      const std::uint32_t mask = allreduce_value_mask(type, nranks);
      for (std::size_t i = 0; i < 200; ++i) {
        // Every partial sum, in ring order, is representable: the stored sum equals the exact one.
        float partial = 0;
        for (int r = 0; r < nranks; ++r) {
          unsigned char cell[2];
          store_element(type, cell, 0, partial + allreduce_input(9, r, i, mask));
          partial = load_element(type, cell, 0);
        }
        REQUIRE(partial == allreduce_expected(9, nranks, i, mask));
      }
    }
  }
}
