// A device that reported IBV_EVENT_DEVICE_FATAL flushes nothing, so closing its comms must not
// drain their QPs (each drain would wait out its timeout: minutes for an ncclCommAbort of hundreds
// of comms). Checked by behaviour, not by a timer: vroce counts every flush completion it
// generates, and the drain is the only thing that posts to a QP at close; closing idle comms on
// a healthy device produces the drain markers' flushes, closing them after DEVICE_FATAL none.
#include <infiniband/verbs.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

int64_t flush_completions() {
  return vroce_stat(vroce_stats(), "completions.wr_flush_err");
}

void close_all(PluginDriver& plugin, const std::vector<CommPair>& pairs) {
  for (const CommPair& pair : pairs) {
    CHECK(plugin.close_send(pair.send) == ncclSuccess);
    CHECK(plugin.close_recv(pair.recv) == ncclSuccess);
  }
}

}  // namespace

TEST_CASE("after DEVICE_FATAL, 200 comms close without draining their QPs",
          "[hardening][dead-device][vroce]") {
  use_test_devices({"dda", "ddb"});
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const int a = require_device(plugin, "dda");
  const int b = require_device(plugin, "ddb");

  // The contrast: idle comms on healthy devices are drained (two markers per QP flushed).
  const auto healthy = open_pairs(plugin, a, b, 2);
  const int64_t before_healthy = flush_completions();
  close_all(plugin, healthy);
  const int64_t healthy_flushes = flush_completions() - before_healthy;
  CHECK(healthy_flushes >= 2 * 2 * 2);  // 2 pairs x 2 QPs x 2 markers

  const auto doomed = open_pairs(plugin, a, b, 100);  // 200 comms
  REQUIRE(inject_port_event("dda", IBV_EVENT_DEVICE_FATAL) >= 1);
  REQUIRE(inject_port_event("ddb", IBV_EVENT_DEVICE_FATAL) >= 1);
  // Wait (a generous bound) until both devices' async-event threads have handled the event: a
  // data-path call on a comm of each device then fails.
  std::vector<char> buffer(4096);
  void* send_mh = nullptr;
  void* recv_mh = nullptr;
  REQUIRE(plugin.reg_mr(doomed[0].send, buffer.data(), buffer.size(), NCCL_PTR_HOST, &send_mh) ==
          ncclSuccess);
  REQUIRE(plugin.reg_mr(doomed[0].recv, buffer.data(), buffer.size(), NCCL_PTR_HOST, &recv_mh) ==
          ncclSuccess);
  const auto give_up = std::chrono::steady_clock::now() + kHangBound;
  ncclResult_t sent = ncclSuccess;
  while (sent == ncclSuccess && std::chrono::steady_clock::now() < give_up) {
    void* request = nullptr;  // nothing to match: isend looks at the device's marks
    sent = plugin.isend(doomed[0].send, buffer.data(), 64, 0, send_mh, &request);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // A receive that will never be matched: testing it is the receiver's data-path call.
  void* data[1] = {buffer.data()};
  size_t sizes[1] = {64};
  int tags[1] = {1};
  void* mhs[1] = {recv_mh};
  void* recv_request = nullptr;
  ncclResult_t received = plugin.irecv(doomed[0].recv, 1, data, sizes, tags, mhs, &recv_request);
  while (received == ncclSuccess && recv_request != nullptr &&
         std::chrono::steady_clock::now() < give_up) {
    int done = 0;
    received = plugin.test(recv_request, &done, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(sent == ncclSystemError);
  CHECK(received == ncclSystemError);
  CHECK(plugin.dereg_mr(doomed[0].send, send_mh) == ncclSuccess);
  CHECK(plugin.dereg_mr(doomed[0].recv, recv_mh) == ncclSuccess);
  const int64_t before = flush_completions();
  const auto start = std::chrono::steady_clock::now();
  close_all(plugin, doomed);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const int64_t flushes = flush_completions() - before;
  std::printf("DEADDEVICE comms=200 close_ms=%.1f flushes=%lld (healthy: %lld for 4 comms)\n", ms,
              static_cast<long long>(flushes), static_cast<long long>(healthy_flushes));
  CHECK(flushes == 0);  // no drain marker was posted to any of their QPs
}
