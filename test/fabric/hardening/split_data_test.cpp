// NCCL_IB_SPLIT_DATA_ON_QPS with several QPs per connection. 0 (NCCL's default): each message
// travels whole on one QP, the QPs taken in turn, and only that QP's receive is posted; 1: every
// message is split over all QPs. The traffic helpers check every byte and size either way;
// vroce's completion count tells the two apart (per small message, one send and one receive
// completion against one per QP on each side), and NCCL's largest count, 128 QPs, works in both.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hardening_support.h"
#include "test_addresses.h"
#include "test_backend.h"

using roce::test::test_address;
using roce::test::use_test_devices;
using roce::test::vroce_device_list;

using namespace roce::test;

namespace {

// Runs `groups` single small messages over one comm with `qps` QPs and the given split setting;
// returns vroce's count of successful completions over the run.
int64_t run_small_messages(int qps, const char* split, int groups) {
  setenv("NCCL_IB_QPS_PER_CONNECTION", std::to_string(qps).c_str(), 1);
  setenv("NCCL_IB_SPLIT_DATA_ON_QPS", split, 1);
  // v11, so that finalize ends this init and the next one reads the settings again: a dlclose
  // alone may leave the plugin loaded (sanitizer runtimes keep libraries mapped), and with it
  // the first run's configuration.
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const int a = require_device(plugin, "sda");
  const int b = require_device(plugin, "sdb");
  const auto pairs = open_pairs(plugin, a, b, 1);
  PlanShape shape;
  shape.groups = groups;
  shape.max_recvs = 1;
  shape.max_single = 64;
  TrafficOptions options;
  options.idle = nap;
  const std::string before = vroce_stats();
  const auto runs = run_pairs(plugin, pairs, 90, shape, options);
  const std::string after = vroce_stats();
  INFO("qps " << qps << " split " << split << ": sender: " << runs[0].sent.error
              << "; receiver: " << runs[0].received.error);
  CHECK(runs[0].sent.ok);
  CHECK(runs[0].received.ok);
  REQUIRE(plugin.finalize() == ncclSuccess);
  return vroce_stat(after, "completions.success") - vroce_stat(before, "completions.success");
}

}  // namespace

TEST_CASE(
    "with 4 QPs, NCCL_IB_SPLIT_DATA_ON_QPS=0 sends each message on one QP and 1 splits it over "
    "all",
    "[hardening][split]") {
  use_test_devices({"sda", "sdb"});
  constexpr int kGroups = 200;
  const int64_t whole = run_small_messages(4, "0", kGroups);
  const int64_t split = run_small_messages(4, "1", kGroups);
  std::printf("SPLIT qps=4 groups=%d completions split0=%lld split1=%lld\n", kGroups,
              static_cast<long long>(whole), static_cast<long long>(split));
  // Per message: 2 completions whole (send + receive), 8 split (4 + 4), plus a few shared ones
  // (periodic CTS signals, drain markers): the split run has well over three times as many.
  CHECK(whole >= 2 * kGroups);
  CHECK(whole < 3 * kGroups);
  CHECK(split > 3 * whole);
}

TEST_CASE("128 QPs per connection (NCCL's largest) carry verified traffic, split or not",
          "[hardening][split]") {
  use_test_devices({"sda", "sdb"});
  for (const char* split : {"0", "1"}) {
    CHECK(run_small_messages(128, split, 300) > 0);
  }
}
