// The element types an all-reduce can carry: what a tensor-parallel model exchanges (fp16,
// bf16) and what the plain all-reduce mode has always used (fp32). Values travel as their real
// bit patterns; the host converts them to and from float for filling, reducing and checking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace roce::bench {

enum class DType { F32, F16, BF16 };

std::size_t dtype_bytes(DType type);
std::string_view dtype_name(DType type);
// "fp32"/"float32"/"float", "fp16"/"float16"/"half", "bf16"/"bfloat16". nullopt otherwise.
std::optional<DType> parse_dtype(std::string_view text);

// IEEE 754 binary16 and bfloat16 from and to float, rounding to nearest even. Exact for the
// small integers the all-reduce check uses; correct for every finite value, inf and NaN.
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_half(float value);
float bfloat16_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16(float value);

// Element `index` of a buffer of `type`, as float, and the reverse.
float load_element(DType type, const void* base, std::size_t index);
void store_element(DType type, void* base, std::size_t index, float value);

// The largest integer every partial sum of the all-reduce check may reach while staying exact
// in `type` (2^24 for fp32, 2^11 for fp16, 2^8 for bf16).
std::uint32_t exact_integer_limit(DType type);

}  // namespace roce::bench
