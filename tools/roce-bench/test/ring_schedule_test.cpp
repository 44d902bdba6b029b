// The ring all-reduce schedule, checked by simulating a ring of ranks that exchange whole chunks
// exactly as the schedule says (no network): every rank must end with the full sum.
#include "ring_schedule.h"

#include <catch2/catch.hpp>
#include <numeric>
#include <vector>

using namespace roce::bench;

TEST_CASE("chunks tile the buffer in order and differ by at most one element") {
  for (int n = 2; n <= 9; ++n) {
    for (std::size_t count : {0u, 1u, 2u, 7u, 8u, 1000u, 1001u}) {
      std::size_t next = 0;
      std::size_t lo = count;
      std::size_t hi = 0;
      for (int c = 0; c < n; ++c) {
        const ElementRange r = ring_chunk(count, n, c);
        CHECK(r.offset == next);
        next += r.count;
        lo = std::min(lo, r.count);
        hi = std::max(hi, r.count);
      }
      CHECK(next == count);
      CHECK(hi - lo <= 1);
    }
  }
}

TEST_CASE("each step sends what the previous step received") {
  for (int n = 2; n <= 8; ++n) {
    for (int r = 0; r < n; ++r) {
      for (int t = 1; t < ring_steps(n); ++t) {
        CHECK(ring_step(r, n, t).send_chunk == ring_step(r, n, t - 1).recv_chunk);
      }
      // Reduce-scatter ends with the reduced chunk r+1, which all-gather starts from.
      CHECK(ring_step(r, n, n - 2).recv_chunk == (r + 1) % n);
      CHECK(ring_step(r, n, n - 1).send_chunk == (r + 1) % n);
      // A rank receives what its predecessor sends at the same step.
      for (int t = 0; t < ring_steps(n); ++t) {
        CHECK(ring_step(r, n, t).recv_chunk == ring_step((r + n - 1) % n, n, t).send_chunk);
        CHECK(ring_step(r, n, t).reduce == (t < n - 1));
      }
    }
  }
}

TEST_CASE("a simulated ring all-reduce following the schedule yields the sum everywhere") {
  for (int n = 2; n <= 8; ++n) {
    const std::size_t count = 37;
    std::vector<std::vector<long>> input(static_cast<std::size_t>(n));
    std::vector<std::vector<long>> output(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < count; ++i) {
        input[static_cast<std::size_t>(r)].push_back(static_cast<long>(i * 100) + r + 1);
      }
      output[static_cast<std::size_t>(r)].assign(count, -1);
    }
    for (int t = 0; t < ring_steps(n); ++t) {
      // Everything sent at step t is read before anything of step t is written.
      std::vector<std::vector<long>> wire(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) {
        const RingStep st = ring_step(r, n, t);
        const ElementRange c = ring_chunk(count, n, st.send_chunk);
        const auto& source =
            t == 0 ? input[static_cast<std::size_t>(r)] : output[static_cast<std::size_t>(r)];
        wire[static_cast<std::size_t>(r)].assign(
            source.begin() + static_cast<long>(c.offset),
            source.begin() + static_cast<long>(c.offset + c.count));
      }
      for (int r = 0; r < n; ++r) {
        const RingStep st = ring_step(r, n, t);
        const ElementRange c = ring_chunk(count, n, st.recv_chunk);
        const auto& from = wire[static_cast<std::size_t>((r + n - 1) % n)];
        REQUIRE(from.size() == c.count);
        for (std::size_t i = 0; i < c.count; ++i) {
          auto& out = output[static_cast<std::size_t>(r)][c.offset + i];
          out = st.reduce ? input[static_cast<std::size_t>(r)][c.offset + i] + from[i] : from[i];
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < count; ++i) {
        const long expected = static_cast<long>(i * 100) * n + static_cast<long>(n * (n + 1) / 2);
        CHECK(output[static_cast<std::size_t>(r)][i] == expected);
      }
    }
  }
}

TEST_CASE("slices cover a chunk with at most slice_elems each") {
  const ElementRange chunk{100, 1000};
  CHECK(slice_count(1000, 256) == 4);
  CHECK(slice_count(0, 256) == 0);
  CHECK(slice_count(256, 256) == 1);
  std::size_t covered = 0;
  for (std::size_t k = 0; k < slice_count(chunk.count, 256); ++k) {
    const ElementRange s = slice_of(chunk, 256, k);
    CHECK(s.offset == chunk.offset + covered);
    CHECK(s.count <= 256);
    covered += s.count;
  }
  CHECK(covered == chunk.count);
}
