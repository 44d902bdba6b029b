// The TCP rendezvous, with ranks as threads of this process on this suite's loopback block.
#include "rendezvous.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "errors.h"

using namespace roce::bench;

namespace {

constexpr const char* kAddress = "127.0.5.250:0";

// Rank 0's listening socket, so the other ranks know the port before rank 0 runs.
struct Listener {
  int fd;
  std::string address;
  Listener() { fd = listen_tcp(kAddress, &address); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const BenchError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("host:port splitting, IPv6 in brackets") {
  CHECK(split_host_port("10.0.0.1:29500").host == "10.0.0.1");
  CHECK(split_host_port("[::1]:7").host == "::1");
  CHECK(split_host_port("[::1]:7").port == "7");
  CHECK_THROWS_AS(split_host_port("10.0.0.1"), BenchError);
  CHECK_THROWS_AS(split_host_port("h:"), BenchError);
}

TEST_CASE("three ranks gather every blob in rank order, repeatedly") {
  Listener l;
  auto rank_body = [&](int rank) {
    Rendezvous r(rank, 3, l.address, rank == 0 ? l.fd : -1, 42, 10);
    std::vector<std::vector<std::string>> results;
    for (int round = 0; round < 3; ++round) {
      results.push_back(r.allgather("r" + std::to_string(rank) + "x" + std::to_string(round)));
    }
    r.barrier();
    r.check_alive();
    // Nobody leaves before everyone has checked: the peers' sockets are all still open.
    r.barrier();
    return results;
  };
  auto f1 = std::async(std::launch::async, rank_body, 1);
  auto f2 = std::async(std::launch::async, rank_body, 2);
  const auto r0 = rank_body(0);
  const auto r1 = f1.get();
  const auto r2 = f2.get();
  for (const auto* results : {&r0, &r1, &r2}) {
    for (int round = 0; round < 3; ++round) {
      const auto& all = (*results)[static_cast<std::size_t>(round)];
      REQUIRE(all.size() == 3);
      for (int rank = 0; rank < 3; ++rank) {
        CHECK(all[static_cast<std::size_t>(rank)] ==
              "r" + std::to_string(rank) + "x" + std::to_string(round));
      }
    }
  }
  close(l.fd);
}

TEST_CASE("a rank started with other options is refused, and both sides say why") {
  Listener l;
  auto other = std::async(std::launch::async, [&] {
    return error_of([&] { Rendezvous r(1, 2, l.address, -1, 7, 10); });
  });
  const std::string rank0 = error_of([&] { Rendezvous r(0, 2, l.address, l.fd, 42, 10); });
  CHECK(rank0.find("different options") != std::string::npos);
  CHECK(other.get().find("refused") != std::string::npos);
  close(l.fd);
}

TEST_CASE("a rank that leaves is noticed by check_alive and by the next exchange") {
  Listener l;
  auto leaver = std::async(std::launch::async, [&] {
    Rendezvous r(1, 2, l.address, -1, 1, 10);
    r.barrier();
  });
  Rendezvous r0(0, 2, l.address, l.fd, 1, 10);
  r0.barrier();
  leaver.get();
  // The peer's socket is closed: within a moment check_alive reports it.
  std::string error = "no error";
  for (int i = 0; i < 100 && error == "no error"; ++i) {
    error = error_of([&] { r0.check_alive(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(error.find("rank 1 has gone") != std::string::npos);
  CHECK(error_of([&] { r0.barrier(); }).find("closed") != std::string::npos);
  close(l.fd);
}

TEST_CASE("a missing rank times out with a hint instead of hanging") {
  Listener l;
  const std::string error = error_of([&] { Rendezvous r(0, 2, l.address, l.fd, 1, 0.3); });
  CHECK(error.find("timed out") != std::string::npos);
  CHECK(error.find("1 of 1 ranks") != std::string::npos);
  close(l.fd);
  const std::string joiner = error_of([&] { Rendezvous r(1, 2, "127.0.5.250:1", -1, 1, 0.2); });
  CHECK(joiner.find("cannot reach rank 0") != std::string::npos);
}
