// The ring all-reduce's arithmetic: how a buffer splits into one chunk per rank, which chunk each
// rank sends and receives at each of the 2(n-1) steps (reduce-scatter, then all-gather), and how
// a chunk splits into pipeline slices. Pure, so the schedule is unit-tested against a simulated
// ring without any network.
#pragma once

#include <cstddef>

namespace roce::bench {

struct ElementRange {
  std::size_t offset = 0;  // in elements
  std::size_t count = 0;
};

// Chunk `chunk` of a buffer of `count` elements split over `nranks` chunks; chunk sizes differ
// by at most one element and the chunks tile the buffer in order.
ElementRange ring_chunk(std::size_t count, int nranks, int chunk);

struct RingStep {
  int send_chunk;  // the chunk this rank sends to the next rank
  int recv_chunk;  // the chunk it receives from the previous rank
  bool reduce;     // true in reduce-scatter (add into the output), false in all-gather (copy)
};

// Step `step` in [0, 2(nranks-1)) of rank `rank`. In reduce-scatter step s rank r sends chunk
// r-s and receives chunk r-s-1; after n-1 steps it owns the reduced chunk r+1, which all-gather
// step 0 sends on. A step's send always carries what the previous step received.
RingStep ring_step(int rank, int nranks, int step);

inline int ring_steps(int nranks) {
  return 2 * (nranks - 1);
}

// Number of slices of at most `slice_elems` elements in a chunk (0 for an empty chunk).
std::size_t slice_count(std::size_t chunk_elems, std::size_t slice_elems);

// Slice `k` of `chunk`.
ElementRange slice_of(ElementRange chunk, std::size_t slice_elems, std::size_t k);

}  // namespace roce::bench
