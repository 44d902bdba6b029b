// Data patterns and their checks.
#include "patterns.h"

namespace roce::bench {
namespace {

// splitmix64's finaliser: every input bit affects every output bit, so a shifted, stale or
// foreign buffer cannot match by accident.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint32_t message_word(std::uint64_t seed, std::size_t index) {
  return static_cast<std::uint32_t>(mix(seed * 0x100000001b3ULL + index) >> 16);
}

void fill_message(std::span<std::uint32_t> words, std::uint64_t seed) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    words[i] = message_word(seed, i);
  }
}

std::size_t count_message_errors(std::span<const std::uint32_t> words, std::uint64_t seed) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] != message_word(seed, i)) {
      ++wrong;
    }
  }
  return wrong;
}

std::uint32_t allreduce_value_mask(DType type, int nranks) {
  const std::uint32_t limit = exact_integer_limit(type);
  std::uint32_t mask = kFloatValueMask;
  while (mask > 1 &&
         static_cast<std::uint64_t>(mask) * static_cast<std::uint64_t>(nranks) > limit) {
    mask >>= 1;
  }
  return mask;
}

float allreduce_input(std::uint64_t seed, int rank, std::size_t index, std::uint32_t mask) {
  const std::uint64_t h = mix(seed ^ (static_cast<std::uint64_t>(rank) << 48) ^ index);
  return static_cast<float>(h & mask);  // 0..1023 by default: 64 ranks sum below 2^24
}

float allreduce_expected(std::uint64_t seed, int nranks, std::size_t index, std::uint32_t mask) {
  float sum = 0;
  for (int r = 0; r < nranks; ++r) {
    sum += allreduce_input(seed, r, index, mask);
  }
  return sum;
}

void fill_allreduce_input(std::span<float> values, std::uint64_t seed, int rank,
                          std::uint32_t mask) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = allreduce_input(seed, rank, i, mask);
  }
}

std::size_t count_allreduce_errors(std::span<const float> values, std::uint64_t seed, int nranks,
                                   std::uint32_t mask) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    // Exact comparison on purpose: the sums are integers the element type holds exactly.
    if (values[i] != allreduce_expected(seed, nranks, i, mask)) {
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace roce::bench
