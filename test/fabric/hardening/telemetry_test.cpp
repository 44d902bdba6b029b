// Runtime observability over vroce: stall reports name what a comm waits for (the peer's
// clear-to-send when the peer does not receive, and an INFO line when that wait ends; a
// completion when the fabric drops everything),
// and the statistics file holds every comm's counters and latencies in JSON lines and
// Prometheus text. No timing assertion: the stall threshold
// is 100 ms and every wait gives up only after 30 s.
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hang_bound.h"
#include "hardening_support.h"
#include "test_addresses.h"
#include "test_backend.h"

using roce::test::test_address;
using roce::test::use_test_devices;
using roce::test::vroce_device_list;

using namespace roce::test;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kGiveUp = kHangBound;

// A request handed out by isend or irecv, tested until done; `sizes` takes what test() reports.
struct Outstanding {
  void* request = nullptr;
  int* sizes = nullptr;
  int done = 0;
};

// Tests every request until all are done or the hang bound passes (the caller checks `done`).
void test_until_done(PluginDriver& plugin, std::vector<Outstanding>& requests) {
  const auto give_up = Clock::now() + kGiveUp;
  const auto all_done = [&] {
    return std::all_of(requests.begin(), requests.end(),
                       [](const Outstanding& r) { return r.done != 0; });
  };
  while (!all_done() && Clock::now() < give_up) {
    for (auto& r : requests) {
      if (r.done == 0) {
        REQUIRE(plugin.test(r.request, &r.done, r.sizes) == ncclSuccess);
      }
    }
  }
}

}  // namespace

TEST_CASE("an isend whose peer posts no receive reports that it waits for the clear-to-send",
          "[hardening][telemetry][vroce]") {
  setenv("NCCL_ROCE_STALL_WARN_MS", "100", 1);
  setenv("NCCL_DEBUG", "INFO", 1);  // the end of the wait is an INFO line
  setenv("NCCL_DEBUG_SUBSYS", "NET", 1);
  use_test_devices({"tla", "tlb"});
  PluginDriver plugin(plugin_path_from_env(), Api::V10);
  REQUIRE(plugin.init() == ncclSuccess);
  const auto pairs =
      open_pairs(plugin, require_device(plugin, "tla"), require_device(plugin, "tlb"), 1);
  std::vector<char> buffer(4096, 'x');
  void* mh = nullptr;
  REQUIRE(plugin.reg_mr(pairs[0].send, buffer.data(), buffer.size(), NCCL_PTR_HOST, &mh) ==
          ncclSuccess);
  reset_warn_count();
  void* request = nullptr;
  const auto give_up = Clock::now() + kGiveUp;
  while (!warned("waiting for the peer's clear-to-send") && Clock::now() < give_up) {
    REQUIRE(plugin.isend(pairs[0].send, buffer.data(), buffer.size(), 7, mh, &request) ==
            ncclSuccess);
    REQUIRE(request == nullptr);  // no receive posted: nothing to match
  }
  CHECK(warned("send comm on tla to " + test_address(1), "waiting for the peer's clear-to-send"));
  CHECK(warned("the peer is not receiving"));
  CHECK(warned("NCCL_ROCE_STALL_WARN_MS"));
  // One line, not a flood: the next would come only once the wait has doubled.
  const auto lines = warn_lines();
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
          return l.find("clear-to-send") != std::string::npos;
        }) <= 4);

  // The peer receives at last: the send goes, and the end of the reported wait is an INFO line
  // (an operator who saw the WARN learns that it recovered, and after how long).
  std::vector<char> in(4096, 0);
  void* rmh = nullptr;
  REQUIRE(plugin.reg_mr(pairs[0].recv, in.data(), in.size(), NCCL_PTR_HOST, &rmh) == ncclSuccess);
  void* data[1] = {in.data()};
  const size_t sizes[1] = {in.size()};
  const int tags[1] = {7};
  void* mhs[1] = {rmh};
  void* rreq = nullptr;
  REQUIRE(plugin.irecv(pairs[0].recv, 1, data, sizes, tags, mhs, &rreq) == ncclSuccess);
  REQUIRE(rreq != nullptr);
  const auto give_up_send = Clock::now() + kGiveUp;
  while (request == nullptr && Clock::now() < give_up_send) {
    REQUIRE(plugin.isend(pairs[0].send, buffer.data(), buffer.size(), 7, mh, &request) ==
            ncclSuccess);
  }
  REQUIRE(request != nullptr);
  std::vector<Outstanding> both{{request}, {rreq}};
  test_until_done(plugin, both);
  REQUIRE(both[0].done == 1);
  REQUIRE(both[1].done == 1);
  CHECK(in == buffer);
  const auto infos = info_lines();
  CHECK(std::any_of(infos.begin(), infos.end(), [](const std::string& l) {
    return l.find("send comm on tla") != std::string::npos &&
           l.find("the wait for the peer's clear-to-send ended after about") != std::string::npos;
  }));
  CHECK(plugin.dereg_mr(pairs[0].recv, rmh) == ncclSuccess);
  CHECK(plugin.dereg_mr(pairs[0].send, mh) == ncclSuccess);
  CHECK(plugin.close_send(pairs[0].send) == ncclSuccess);
  CHECK(plugin.close_recv(pairs[0].recv) == ncclSuccess);
}

TEST_CASE("a send the fabric drops reports that it waits for its completion, as does the irecv",
          "[hardening][telemetry][vroce]") {
  setenv("NCCL_ROCE_STALL_WARN_MS", "100", 1);
  setenv("NCCL_IB_TIMEOUT", "20", 1);  // 4.3 s x 8 attempts: the QP outlives the test's wait
  setenv("NCCL_IB_RETRY_CNT", "7", 1);
  use_test_devices({"tlc", "tld"});
  PluginDriver plugin(plugin_path_from_env(), Api::V10);
  REQUIRE(plugin.init() == ncclSuccess);
  const auto pairs =
      open_pairs(plugin, require_device(plugin, "tlc"), require_device(plugin, "tld"), 1);
  std::vector<char> out(8192, 'y');
  std::vector<char> in(8192, 0);
  void* smh = nullptr;
  void* rmh = nullptr;
  REQUIRE(plugin.reg_mr(pairs[0].send, out.data(), out.size(), NCCL_PTR_HOST, &smh) == ncclSuccess);
  REQUIRE(plugin.reg_mr(pairs[0].recv, in.data(), in.size(), NCCL_PTR_HOST, &rmh) == ncclSuccess);
  // A two-buffer receive: the first isend matches it without posting anything, which proves the
  // clear-to-send has arrived; then the link goes down and the second isend posts the group.
  void* data[2] = {in.data(), in.data() + 4096};
  const size_t sizes[2] = {4096, 4096};
  const int tags[2] = {1, 2};
  void* mhs[2] = {rmh, rmh};
  void* rreq = nullptr;
  REQUIRE(plugin.irecv(pairs[0].recv, 2, data, sizes, tags, mhs, &rreq) == ncclSuccess);
  REQUIRE(rreq != nullptr);
  void* first = nullptr;
  auto give_up = Clock::now() + kGiveUp;
  while (first == nullptr && Clock::now() < give_up) {
    REQUIRE(plugin.isend(pairs[0].send, out.data(), 4096, 1, smh, &first) == ncclSuccess);
  }
  REQUIRE(first != nullptr);
  REQUIRE(inject_port_event("tlc", IBV_EVENT_PORT_ERR) >= 1);
  void* second = nullptr;
  REQUIRE(plugin.isend(pairs[0].send, out.data() + 4096, 4096, 2, smh, &second) == ncclSuccess);
  REQUIRE(second != nullptr);
  reset_warn_count();
  give_up = Clock::now() + kGiveUp;
  int done = 0;
  while ((!warned("waiting for its completion") || !warned("irecv is waiting for data")) &&
         Clock::now() < give_up) {
    REQUIRE(plugin.test(second, &done, nullptr) == ncclSuccess);
    REQUIRE(done == 0);
    int rdone = 0;
    REQUIRE(plugin.test(rreq, &rdone, nullptr) == ncclSuccess);
    REQUIRE(rdone == 0);
  }
  CHECK(warned("send comm on tlc to " + test_address(1),
               "a 4096-byte send is waiting for its completion"));
  CHECK(warned("is not being acknowledged"));
  CHECK(warned("recv comm on tld from",
               "gid ::ffff:" + test_address(0) + "): irecv is waiting for data"));
  // The link comes back: RC retransmission delivers, every request completes.
  REQUIRE(inject_port_event("tlc", IBV_EVENT_PORT_ACTIVE) >= 1);
  int got[2] = {-1, -1};
  std::vector<Outstanding> all{{first}, {second}, {rreq, got}};
  test_until_done(plugin, all);
  CHECK(all[0].done == 1);
  CHECK(all[1].done == 1);
  REQUIRE(all[2].done == 1);
  CHECK(got[0] == 4096);
  CHECK(got[1] == 4096);
  CHECK(std::string(in.begin(), in.end()) == std::string(out.begin(), out.end()));
  CHECK(plugin.dereg_mr(pairs[0].send, smh) == ncclSuccess);
  CHECK(plugin.dereg_mr(pairs[0].recv, rmh) == ncclSuccess);
  CHECK(plugin.close_send(pairs[0].send) == ncclSuccess);
  CHECK(plugin.close_recv(pairs[0].recv) == ncclSuccess);
}

TEST_CASE("the statistics file holds every comm's counters, as JSON lines and Prometheus text",
          "[hardening][telemetry][vroce]") {
  const std::string pattern = "/tmp/roce-telemetry-test.%p.jsonl";
  const std::string path = "/tmp/roce-telemetry-test." + std::to_string(getpid()) + ".jsonl";
  std::remove(path.c_str());
  std::remove((path + ".prom").c_str());
  setenv("NCCL_ROCE_STATS_FILE", pattern.c_str(), 1);
  setenv("NCCL_ROCE_STATS_INTERVAL_MS", "100", 1);
  setenv("NCCL_ROCE_STATS", "1", 1);
  use_test_devices({"tle", "tlf"});
  {
    PluginDriver plugin(plugin_path_from_env(), Api::V11);
    REQUIRE(plugin.init() == ncclSuccess);
    const auto pairs =
        open_pairs(plugin, require_device(plugin, "tle"), require_device(plugin, "tlf"), 2);
    PlanShape shape;
    shape.groups = 40;
    const auto runs = run_pairs(plugin, pairs, 91, shape, napping());
    for (const auto& run : runs) {
      CHECK(run.sent.ok);
      CHECK(run.received.ok);
    }
    REQUIRE(plugin.finalize() == ncclSuccess);  // the last finalize writes the file once more
  }
  const std::string lines = read_text_file(path);
  INFO(lines.substr(0, 2000));
  // Two pairs: two send and two recv comms, each closed, each with messages and latencies.
  int send_lines = 0;
  int recv_lines = 0;
  std::istringstream stream(lines);
  for (std::string line; std::getline(stream, line);) {
    if (line.find("\"closed\":true") == std::string::npos) {
      continue;
    }
    send_lines += line.find("\"direction\":\"send\"") != std::string::npos ? 1 : 0;
    recv_lines += line.find("\"direction\":\"recv\"") != std::string::npos ? 1 : 0;
    CHECK(line.find("\"messages\":0,") == std::string::npos);
    CHECK(line.find("\"completion_us\":{\"count\":") != std::string::npos);
    CHECK(line.find("\"errors\":0") != std::string::npos);
  }
  CHECK(send_lines >= 2);
  CHECK(recv_lines >= 2);
  const std::string prom = read_text_file(path + ".prom");
  CHECK(prom.find("# TYPE nccl_roce_comm_messages_total counter") != std::string::npos);
  CHECK(prom.find("direction=\"send\",device=\"tle\",peer=\"" + test_address(1)) !=
        std::string::npos);
  std::remove(path.c_str());
  std::remove((path + ".prom").c_str());
  unsetenv("NCCL_ROCE_STATS_FILE");
}

TEST_CASE("every completed message is counted, and one in NCCL_ROCE_STATS_SAMPLE is timed",
          "[hardening][telemetry][vroce]") {
  // The completion loops take most completions without the telemetry's call; this checks that
  // nothing is lost between that path and the one that samples: windows of eight receives and
  // eight sends, so that a poll finds several completions, and sampled ones among them.
  const std::string pattern = "/tmp/roce-telemetry-count-test.%p.jsonl";
  const std::string path = "/tmp/roce-telemetry-count-test." + std::to_string(getpid()) + ".jsonl";
  std::remove(path.c_str());
  std::remove((path + ".prom").c_str());
  setenv("NCCL_ROCE_STATS_FILE", pattern.c_str(), 1);
  setenv("NCCL_ROCE_STATS", "1", 1);
  setenv("NCCL_ROCE_STATS_SAMPLE", "5", 1);
  use_test_devices({"tlg", "tlh"});
  constexpr int kWindows = 15;
  constexpr int kWindow = 8;
  constexpr int kMessages = kWindows * kWindow;
  constexpr size_t kBytes = 8;
  {
    PluginDriver plugin(plugin_path_from_env(), Api::V11);
    REQUIRE(plugin.init() == ncclSuccess);
    const auto pairs =
        open_pairs(plugin, require_device(plugin, "tlg"), require_device(plugin, "tlh"), 1);
    std::vector<char> out(kWindow * kBytes, 'x');
    std::vector<char> in(kWindow * kBytes, 0);
    void* smh = nullptr;
    void* rmh = nullptr;
    REQUIRE(plugin.reg_mr(pairs[0].send, out.data(), out.size(), NCCL_PTR_HOST, &smh) ==
            ncclSuccess);
    REQUIRE(plugin.reg_mr(pairs[0].recv, in.data(), in.size(), NCCL_PTR_HOST, &rmh) == ncclSuccess);
    std::vector<int> sizes(kWindow, 0);
    for (int w = 0; w < kWindows; ++w) {
      std::vector<Outstanding> requests;
      for (int i = 0; i < kWindow; ++i) {
        void* data[1] = {in.data() + static_cast<size_t>(i) * kBytes};
        const size_t lengths[1] = {kBytes};
        const int tags[1] = {3};
        void* mhs[1] = {rmh};
        void* request = nullptr;
        REQUIRE(plugin.irecv(pairs[0].recv, 1, data, lengths, tags, mhs, &request) == ncclSuccess);
        REQUIRE(request != nullptr);
        requests.push_back({request, &sizes[static_cast<size_t>(i)]});
      }
      for (int i = 0; i < kWindow; ++i) {
        void* request = nullptr;
        const auto give_up = Clock::now() + kGiveUp;
        while (request == nullptr && Clock::now() < give_up) {
          char* data = out.data() + static_cast<size_t>(i) * kBytes;
          REQUIRE(plugin.isend(pairs[0].send, data, kBytes, 3, smh, &request) == ncclSuccess);
        }
        REQUIRE(request != nullptr);
        requests.push_back({request});
      }
      test_until_done(plugin, requests);
      for (const auto& r : requests) {
        REQUIRE(r.done == 1);
      }
      CHECK(std::all_of(sizes.begin(), sizes.end(), [](int s) { return s == int{kBytes}; }));
    }
    CHECK(plugin.dereg_mr(pairs[0].recv, rmh) == ncclSuccess);
    CHECK(plugin.dereg_mr(pairs[0].send, smh) == ncclSuccess);
    CHECK(plugin.close_send(pairs[0].send) == ncclSuccess);
    CHECK(plugin.close_recv(pairs[0].recv) == ncclSuccess);
    REQUIRE(plugin.finalize() == ncclSuccess);
  }
  const std::string lines = read_text_file(path);
  INFO(lines.substr(0, 2000));
  // Sampled: the first request, then one in five: 1, 6, ..., 116.
  const int sampled = 1 + (kMessages - 1) / 5;
  const std::string messages = "\"messages\":" + std::to_string(kMessages) + ",";
  const std::string bytes = "\"bytes\":" + std::to_string(kMessages * kBytes) + ",";
  const std::string timed = "\"completion_us\":{\"count\":" + std::to_string(sampled) + ",";
  int closed = 0;
  std::istringstream stream(lines);
  for (std::string line; std::getline(stream, line);) {
    if (line.find("\"closed\":true") == std::string::npos) {
      continue;
    }
    ++closed;
    INFO(line);
    CHECK(line.find(messages) != std::string::npos);
    CHECK(line.find(bytes) != std::string::npos);
    CHECK(line.find(timed) != std::string::npos);
  }
  CHECK(closed == 2);  // the send comm and the recv comm
  std::remove(path.c_str());
  std::remove((path + ".prom").c_str());
  unsetenv("NCCL_ROCE_STATS_FILE");
  unsetenv("NCCL_ROCE_STATS_SAMPLE");
}
