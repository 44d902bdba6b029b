// Element types and their conversions.
#include "dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace roce::bench {

std::size_t dtype_bytes(DType type) {
  return type == DType::F32 ? 4 : 2;
}

std::string_view dtype_name(DType type) {
  switch (type) {
    case DType::F32:
      return "fp32";
    case DType::F16:
      return "fp16";
    case DType::BF16:
      return "bf16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view text) {
  if (text == "fp32" || text == "float32" || text == "float") {
    return DType::F32;
  }
  if (text == "fp16" || text == "float16" || text == "half") {
    return DType::F16;
  }
  if (text == "bf16" || text == "bfloat16") {
    return DType::BF16;
  }
  return std::nullopt;
}

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000U) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fU;
  std::uint32_t mantissa = bits & 0x3ffU;
  std::uint32_t out = 0;
  if (exponent == 0x1f) {  // inf or NaN: keep the payload
    out = sign | 0x7f800000U | (mantissa << 13);
  } else if (exponent != 0) {  // normal: rebias 15 -> 127
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa != 0) {  // subnormal: normalise
    int shift = 0;
    while ((mantissa & 0x400U) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    out = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | ((mantissa & 0x3ffU) << 13);
  } else {
    out = sign;
  }
  return std::bit_cast<float>(out);
}

std::uint16_t float_to_half(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000U);
  const std::uint32_t abs = bits & 0x7fffffffU;
  if (abs >= 0x7f800000U) {  // inf, or NaN made quiet
    return static_cast<std::uint16_t>(sign | 0x7c00U | (abs > 0x7f800000U ? 0x200U : 0U));
  }
  if (abs >= 0x477ff000U) {  // rounds to 65520 or more: overflows to inf
    return static_cast<std::uint16_t>(sign | 0x7c00U);
  }
  if (abs < 0x38800000U) {  // below the smallest normal half (2^-14): subnormal or zero
    // Scaling by 2^24 turns the half subnormal step (2^-24) into 1; float's own rounding of
    // the addition below is round-to-nearest-even.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0F;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)));
  }
  // Normal: drop 13 mantissa bits with round to nearest, ties to even; a carry into the
  // exponent is the correct result.
  const std::uint32_t rebased = abs - (112U << 23);
  const std::uint32_t rounded = rebased + 0xfffU + ((rebased >> 13) & 1U);
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

float bfloat16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_bfloat16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffU) > 0x7f800000U) {  // NaN: keep it a (quiet) NaN
    return static_cast<std::uint16_t>((bits >> 16) | 0x40U);
  }
  const std::uint32_t rounded = bits + 0x7fffU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>(rounded >> 16);
}

float load_element(DType type, const void* base, std::size_t index) {
  if (type == DType::F32) {
    float v = 0;
    std::memcpy(&v, static_cast<const char*>(base) + index * 4, 4);
    return v;
  }
  std::uint16_t bits = 0;
  std::memcpy(&bits, static_cast<const char*>(base) + index * 2, 2);
  return type == DType::F16 ? half_to_float(bits) : bfloat16_to_float(bits);
}

void store_element(DType type, void* base, std::size_t index, float value) {
  if (type == DType::F32) {
    std::memcpy(static_cast<char*>(base) + index * 4, &value, 4);
    return;
  }
  const std::uint16_t bits = type == DType::F16 ? float_to_half(value) : float_to_bfloat16(value);
  std::memcpy(static_cast<char*>(base) + index * 2, &bits, 2);
}

std::uint32_t exact_integer_limit(DType type) {
  switch (type) {
    case DType::F32:
      return 1U << 24;
    case DType::F16:
      return 1U << 11;
    case DType::BF16:
      return 1U << 8;
  }
  return 1;
}

}  // namespace roce::bench
