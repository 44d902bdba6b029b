// The data every message and all-reduce carries, so each received element can be checked.
// Point-to-point messages carry 32-bit words derived from (seed, index), compared bit for bit.
// All-reduce inputs are small integers stored as floats, so any sum over up to 64 ranks is exact
// in float arithmetic whatever the order of additions: the expected value is known exactly.
// For fp16 and bf16 the integers are smaller (allreduce_value_mask), so that every partial sum
// stays exact in those types too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "dtype.h"

namespace roce::bench {

std::uint32_t message_word(std::uint64_t seed, std::size_t index);
void fill_message(std::span<std::uint32_t> words, std::uint64_t seed);
// Number of words that differ from fill_message(seed).
std::size_t count_message_errors(std::span<const std::uint32_t> words, std::uint64_t seed);

// Inputs are 0..mask. The default suits fp32 and 64 ranks.
inline constexpr std::uint32_t kFloatValueMask = 0x3ff;
// The largest mask 2^k-1 (at most kFloatValueMask) whose sum over `nranks` is exact in `type`.
std::uint32_t allreduce_value_mask(DType type, int nranks);

float allreduce_input(std::uint64_t seed, int rank, std::size_t index,
                      std::uint32_t mask = kFloatValueMask);
float allreduce_expected(std::uint64_t seed, int nranks, std::size_t index,
                         std::uint32_t mask = kFloatValueMask);
void fill_allreduce_input(std::span<float> values, std::uint64_t seed, int rank,
                          std::uint32_t mask = kFloatValueMask);
// Elements that are not exactly the expected sum.
std::size_t count_allreduce_errors(std::span<const float> values, std::uint64_t seed, int nranks,
                                   std::uint32_t mask = kFloatValueMask);

}  // namespace roce::bench
