// NCCL's two threads at once: the proxy service thread connects, accepts, registers and closes
// while the progress thread runs isend/irecv/test on comms already open (here, each comm's two
// sides on threads of their own). Labelled sanitize: under TSan this is the test that must show
// no race between setup and the data path (the MR cache, the device's shared state, the
// connect-attempt registry, the logger).
#include <atomic>
#include <catch2/catch.hpp>
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

TEST_CASE("connect, accept, regMr and close on the service thread while the data path runs",
          "[hardening][threads][quick]") {
  use_test_devices({"hda", "hdb"});
  PluginDriver plugin(plugin_path_from_env(), Api::V9);
  REQUIRE(plugin.init() == ncclSuccess);
  const int a = require_device(plugin, "hda");
  const int b = require_device(plugin, "hdb");
  const auto busy = open_pairs(plugin, a, b, 2);

  std::atomic<bool> data_done{false};
  std::vector<PairRun> runs;
  std::thread progress([&] {
    PlanShape shape;
    shape.groups = 120;
    shape.max_single = 128 << 10;
    shape.max_multi = 16 << 10;
    TrafficOptions options;
    options.idle = nap;
    runs = run_pairs(plugin, busy, 81, shape, options);
    data_done = true;
  });

  // The service thread: whole connection lifecycles, with registrations on the busy devices,
  // until the data path is done (at least a few, however fast the traffic is).
  int cycles = 0;
  std::vector<uint8_t> buffer(1 << 20);
  while (!data_done || cycles < 3) {
    Handle handle;
    void* listen_comm = nullptr;
    REQUIRE(plugin.listen(b, &handle, &listen_comm) == ncclSuccess);
    void* send_comm = nullptr;
    void* recv_comm = nullptr;
    std::string error;
    const bool connected = connect_accept_alternating(plugin, a, listen_comm, &handle, &send_comm,
                                                      &recv_comm, kHangBoundMs, &error);
    INFO(error);
    REQUIRE(connected);
    REQUIRE(plugin.close_listen(listen_comm) == ncclSuccess);
    void* smh = nullptr;
    void* rmh = nullptr;
    const size_t offset = static_cast<size_t>(cycles % 16) * 4096;
    REQUIRE(plugin.reg_mr(send_comm, buffer.data() + offset, 65536, NCCL_PTR_HOST, &smh) ==
            ncclSuccess);
    REQUIRE(plugin.reg_mr(recv_comm, buffer.data(), buffer.size(), NCCL_PTR_HOST, &rmh) ==
            ncclSuccess);
    REQUIRE(plugin.dereg_mr(send_comm, smh) == ncclSuccess);
    REQUIRE(plugin.dereg_mr(recv_comm, rmh) == ncclSuccess);
    REQUIRE(plugin.close_send(send_comm) == ncclSuccess);
    REQUIRE(plugin.close_recv(recv_comm) == ncclSuccess);
    ++cycles;
  }
  progress.join();
  for (size_t i = 0; i < runs.size(); ++i) {
    INFO("comm " << i << ": sender: " << runs[i].sent.error
                 << "; receiver: " << runs[i].received.error);
    CHECK(runs[i].sent.ok);
    CHECK(runs[i].received.ok);
  }
  CHECK(cycles >= 3);
  std::printf("THREADS service_cycles=%d data_bytes=%llu\n", cycles,
              static_cast<unsigned long long>(
                  runs.empty() ? 0 : runs[0].received.bytes + runs[1].received.bytes));
  std::fflush(stdout);
}
