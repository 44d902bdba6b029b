// Soak: messages of random sizes (mostly small, some up to 64 KiB) over 8 comms through the
// plugin over vroce. RSS is sampled during the run and must stay flat; at the end every QP, CQ
// and MR the comms created is gone (vroce's live-object gauges). The CI run sends 100 000
// messages; ROCE_SOAK_MESSAGES=1000000 gives the full run recorded in docs/reliability.md.
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

using namespace roce::test;

TEST_CASE("soak: 8 comms of random-size messages, RSS flat, no leaked QPs, CQs or MRs",
          "[hardening][soak]") {
  constexpr int kComms = 8;
  long target = 100000;
  if (const char* text = std::getenv("ROCE_SOAK_MESSAGES")) {
    target = std::atol(text);
  }
  REQUIRE(target > 0);
  setenv("VROCE_DEVICES", "hda=127.0.9.60,hdb=127.0.9.61", 1);
  PluginDriver plugin(plugin_path_from_env(), Api::V10);
  REQUIRE(plugin.init() == ncclSuccess);
  const int a = plugin.find_device("hda");
  const int b = plugin.find_device("hdb");
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  const std::string baseline = vroce_stats();

  PlanShape shape;
  shape.max_single = 64 << 10;
  shape.max_multi = 4 << 10;
  shape.window = 16;
  // Size the plan so the comms together carry `target` messages (the plan says exactly how many).
  shape.groups = 1000;
  long per_thousand = 0;
  for (const auto& group : make_plan(1000, shape)) {
    per_thousand += static_cast<long>(group.entries.size());
  }
  shape.groups = static_cast<int>(std::max<long>(1, target * 1000 / per_thousand / kComms));
  long messages = 0;
  for (int i = 0; i < kComms; ++i) {
    const auto plan = make_plan(1000 + static_cast<uint64_t>(i), shape);
    for (int g = 0; g < shape.groups; ++g) {
      messages += static_cast<long>(plan[static_cast<size_t>(g)].entries.size());
    }
  }

  const auto pairs = open_pairs(plugin, a, b, kComms);
  std::atomic<bool> stop{false};
  std::vector<long> samples;
  std::thread sampler([&] {
    while (!stop) {
      samples.push_back(rss_kib());
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
  // allocator's arenas warm), RSS may not grow by more than 8 MiB. A leak of only 8 bytes per
  // message would be 8 MB over the million; allocator noise across 16 threads stays well below.
  REQUIRE(samples.size() >= 10);
  const size_t warm = samples.size() / 10;
  const long settled =
      *std::max_element(samples.begin(), samples.begin() + static_cast<long>(warm) + 1);
  const long peak = *std::max_element(samples.begin() + static_cast<long>(warm), samples.end());
  const long last = samples.back();
  std::printf(
      "SOAK comms=%d messages=%ld groups_per_comm=%d MB=%.1f s=%.1f msgs/s=%.0f "
      "rss_settled_kib=%ld rss_peak_kib=%ld rss_last_kib=%ld samples=%zu live_qps=%lld "
      "live_mrs=%lld\n",
      kComms, messages, shape.groups, static_cast<double>(bytes) / 1e6, seconds,
      static_cast<double>(messages) / seconds, settled, peak, last, samples.size(),
      static_cast<long long>(vroce_stat(end, "live.qps")),
      static_cast<long long>(vroce_stat(end, "live.mrs")));
  std::fflush(stdout);
  CHECK(peak - settled <= 8 * 1024);
}
