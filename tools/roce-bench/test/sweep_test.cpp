// Size sweeps and the automatic iteration counts.
#include "sweep.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "options.h"

using namespace roce::bench;

namespace {

std::vector<std::size_t> sizes(std::vector<std::string> args) {
  std::vector<std::size_t> out;
  for (const auto& s : size_sweep(parse_options(args))) {
    out.push_back(s.bytes);
  }
  return out;
}

}  // namespace

TEST_CASE("the default all-reduce sweep is 8 B to 64 MiB by factors of 2") {
  const auto s = sizes({});
  REQUIRE(s.size() == 24);
  CHECK(s.front() == 8);
  CHECK(s.back() == 64u << 20);
  for (std::size_t i = 1; i < s.size(); ++i) {
    CHECK(s[i] == 2 * s[i - 1]);
  }
}

TEST_CASE("sizes round down to whole floats, never below one, without duplicates") {
  CHECK(sizes({"-b", "5", "-e", "40", "-f", "3"}) == std::vector<std::size_t>{4, 12});
  CHECK(sizes({"-b", "4", "-e", "4"}) == std::vector<std::size_t>{4});
  CHECK(sizes({"-b", "1K", "-e", "1G", "-f", "1024"}) ==
        std::vector<std::size_t>{1024, 1u << 20, 1u << 30});
}

TEST_CASE("-n and -w override the automatic counts for every size") {
  for (const auto& s : size_sweep(parse_options(std::vector<std::string>{"-n", "3", "-w", "1"}))) {
    CHECK(s.iters == 3);
    CHECK(s.warmup == 1);
  }
}

TEST_CASE("automatic iterations shrink with the size but stay within bounds") {
  CHECK(auto_iterations(Mode::PingPong, 8).iters == 2000);
  CHECK(auto_iterations(Mode::PingPong, 1u << 20).iters == 128);
  CHECK(auto_iterations(Mode::PingPong, 64u << 20).iters == 20);
  CHECK(auto_iterations(Mode::AllReduce, 8).iters == 100);
  CHECK(auto_iterations(Mode::AllReduce, 64u << 20).iters == 4);
  CHECK(auto_iterations(Mode::Bandwidth, 64u << 20).iters == 16);
  for (auto mode : {Mode::PingPong, Mode::Bandwidth, Mode::BiBandwidth, Mode::AllReduce}) {
    CHECK(auto_iterations(mode, 1u << 30).warmup >= 1);
  }
}
