// Data patterns: every damaged word is found, all-reduce sums are exact.
#include "patterns.h"

#include <catch2/catch.hpp>
#include <vector>

#include "stats.h"

using namespace roce::bench;

TEST_CASE("message patterns detect a flipped bit, a shift and a foreign seed") {
  std::vector<std::uint32_t> words(1024);
  fill_message(words, 7);
  CHECK(count_message_errors(words, 7) == 0);
  CHECK(count_message_errors(words, 8) > 1000);
  words[500] ^= 1U << 20;
  CHECK(count_message_errors(words, 7) == 1);
  std::vector<std::uint32_t> shifted(words.begin() + 1, words.end());
  fill_message(words, 7);
  CHECK(count_message_errors(std::span<const std::uint32_t>(words.data() + 1, 1023), 7) > 1000);
}

TEST_CASE("all-reduce inputs are small integers whose sums are exact for 64 ranks") {
  for (std::size_t i = 0; i < 1000; ++i) {
    double exact = 0;
    for (int r = 0; r < 64; ++r) {
      const float v = allreduce_input(3, r, i);
      CHECK(v >= 0);
      CHECK(v <= 1023);
      exact += static_cast<double>(v);
    }
    CHECK(static_cast<double>(allreduce_expected(3, 64, i)) == exact);
  }
}

TEST_CASE("all-reduce checking counts exactly the wrong elements") {
  const int nranks = 4;
  std::vector<float> out(777);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = allreduce_expected(11, nranks, i);
  }
  CHECK(count_allreduce_errors(out, 11, nranks) == 0);
  out[3] += 1;
  out[700] = 0;
  CHECK(count_allreduce_errors(out, 11, nranks) == 2);
  // Inputs differ between ranks, so a rank's own input is not the sum.
  std::vector<float> own(777);
  fill_allreduce_input(own, 11, 0);
  CHECK(count_allreduce_errors(own, 11, nranks) > 700);
}

TEST_CASE("percentiles use the nearest rank") {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) {
    samples.push_back(i);
  }
  const Percentiles p = percentiles(samples);
  CHECK(p.p50 == 50);
  CHECK(p.p90 == 90);
  CHECK(p.p99 == 99);
  CHECK(p.min == 1);
  CHECK(p.max == 100);
  CHECK(p.mean == Approx(50.5));
  CHECK(percentiles({}).p50 == 0);
  CHECK(percentiles({4.0}).p99 == 4.0);
}
