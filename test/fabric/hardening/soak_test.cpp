// Soak: messages of random sizes (mostly small, some up to 64 KiB) over 8 comms through the
// plugin over vroce. The memory in use (VmRSS; in a sanitizer build, the sanitizer allocator's
// live bytes, as its quarantine keeps freed blocks resident) is sampled during the run and must
// stay flat; at the end every QP, CQ and MR the comms created is gone (vroce's live-object
// gauges). A million messages by default (about 15 s on 2 cores); ROCE_SOAK_MESSAGES=N changes
// the count.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hardening_support.h"
#include "test_addresses.h"
#include "test_backend.h"

using roce::test::test_address;
using roce::test::use_test_devices;
using roce::test::vroce_device_list;

using namespace roce::test;

TEST_CASE("soak: 8 comms of random-size messages, memory flat, no leaked QPs, CQs or MRs",
          "[hardening][soak][vroce]") {
  constexpr int kComms = 8;
  long target = 1000000;
  if (const char* text = std::getenv("ROCE_SOAK_MESSAGES")) {
    target = std::atol(text);
  }
  REQUIRE(target > 0);
  use_test_devices({"hda", "hdb"});
  PluginDriver plugin(plugin_path_from_env(), Api::V10);
  REQUIRE(plugin.init() == ncclSuccess);
  const int a = require_device(plugin, "hda");
  const int b = require_device(plugin, "hdb");
  const std::string baseline = vroce_stats();

  PlanShape shape;
  shape.max_single = 64 << 10;
  shape.max_multi = 4 << 10;
  shape.window = 16;
  // Size the plan so the comms together carry at least `target` messages. A plan's first G
  // groups do not depend on how many follow, so the count is read off one generous plan per comm.
  shape.groups = static_cast<int>(target / kComms + 1);  // at least one message per group
  std::vector<std::vector<PlannedGroup>> plans;
  for (int i = 0; i < kComms; ++i) {
    plans.push_back(make_plan(1000 + static_cast<uint64_t>(i), shape));
  }
  long messages = 0;
  int groups = 0;
  while (messages < target && groups < shape.groups) {
    for (const auto& plan : plans) {
      messages += static_cast<long>(plan[static_cast<size_t>(groups)].entries.size());
    }
    ++groups;
  }
  shape.groups = groups;
  plans.clear();
  REQUIRE(messages >= target);
  const auto pairs = open_pairs(plugin, a, b, kComms);
  std::atomic<bool> stop{false};
  std::vector<long> samples;
  std::thread sampler([&] {
    while (!stop) {
      samples.push_back(memory_in_use_kib());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  TrafficOptions options;
  options.idle = nap;
  options.deadline = std::chrono::seconds(3000);
  const auto start = std::chrono::steady_clock::now();
  const auto runs = run_pairs(plugin, pairs, 1000, shape, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  sampler.join();

  uint64_t bytes = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    INFO("comm " << i << ": sender: " << runs[i].sent.error
                 << "; receiver: " << runs[i].received.error);
    REQUIRE(runs[i].sent.ok);
    REQUIRE(runs[i].received.ok);
    bytes += runs[i].received.bytes;
  }
  const std::string end = vroce_stats();
  for (const char* live : {"live.qps", "live.cqs", "live.mrs"}) {
    INFO(live);
    CHECK(vroce_stat(end, live) == vroce_stat(baseline, live));
  }

  // Flat: after the first tenth of the run (arenas registered, pools and rings allocated, the
  // allocator's arenas warm), the memory in use may not grow by more than 8 MiB. A leak of only 8
  // bytes per message would be 8 MB over the million; allocator noise across 16 threads stays well
  // below.
  REQUIRE(samples.size() >= 10);
  const size_t warm = samples.size() / 10;
  const long settled =
      *std::max_element(samples.begin(), samples.begin() + static_cast<long>(warm) + 1);
  const long peak = *std::max_element(samples.begin() + static_cast<long>(warm), samples.end());
  const long last = samples.back();
  std::printf(
      "SOAK comms=%d messages=%ld groups_per_comm=%d MB=%.1f s=%.1f msgs/s=%.0f "
      "memory_settled_kib=%ld memory_peak_kib=%ld memory_last_kib=%ld samples=%zu live_qps=%lld "
      "live_mrs=%lld\n",
      kComms, messages, shape.groups, static_cast<double>(bytes) / 1e6, seconds,
      static_cast<double>(messages) / seconds, settled, peak, last, samples.size(),
      static_cast<long long>(vroce_stat(end, "live.qps")),
      static_cast<long long>(vroce_stat(end, "live.mrs")));
  std::fflush(stdout);
  CHECK(peak - settled <= 8 * 1024);
}
