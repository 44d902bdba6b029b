// Ring all-reduce schedule arithmetic.
#include "ring_schedule.h"

#include <algorithm>

namespace roce::bench {
namespace {

int wrap(int value, int n) {
  return ((value % n) + n) % n;
}

}  // namespace

ElementRange ring_chunk(std::size_t count, int nranks, int chunk) {
  const auto n = static_cast<std::size_t>(nranks);
  const auto c = static_cast<std::size_t>(chunk);
  const std::size_t base = count / n;
  const std::size_t extra = count % n;
  return {c * base + std::min(c, extra), base + (c < extra ? 1 : 0)};
}

RingStep ring_step(int rank, int nranks, int step) {
  const int half = nranks - 1;
  if (step < half) {
    return {wrap(rank - step, nranks), wrap(rank - step - 1, nranks), true};
  }
  const int s = step - half;
  return {wrap(rank + 1 - s, nranks), wrap(rank - s, nranks), false};
}

std::size_t slice_count(std::size_t chunk_elems, std::size_t slice_elems) {
  return (chunk_elems + slice_elems - 1) / slice_elems;
}

ElementRange slice_of(ElementRange chunk, std::size_t slice_elems, std::size_t k) {
  const std::size_t begin = k * slice_elems;
  const std::size_t end = std::min(chunk.count, begin + slice_elems);
  return {chunk.offset + begin, end > begin ? end - begin : 0};
}

}  // namespace roce::bench
