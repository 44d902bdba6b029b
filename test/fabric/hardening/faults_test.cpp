// Verified traffic over several comms while vroce injects faults on every packet both devices
// send (VROCE_FAULTS: loss, reordering, duplication, corruption): every byte and size is checked
// by the traffic helpers, every run is bounded by their watchdog, and vroce's counters show the
// faults happened and were recovered from. One line per run, "FAULTS ...", gives the figures
// docs/reliability.md records.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hardening_support.h"
#include "test_addresses.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace roce::test;

namespace {

struct FaultRun {
  const char* name;
  const char* faults;   // VROCE_FAULTS
  std::string devices;  // VROCE_DEVICES, on this process's own addresses
  int comms;
  int groups;
};

void run_with_faults(const FaultRun& run) {
  setenv("VROCE_DEVICES", run.devices.c_str(), 1);
  setenv("VROCE_FAULTS", run.faults, 1);
  // 67 ms local ACK timeout, 7 retries (0.5 s without progress before RETRY_EXC): a lost tail
  // costs one timeout, not NCCL's 4 s, and a loaded 2-core machine that stalls the progress
  // threads for a fraction of a second does not end the run.
  setenv("NCCL_IB_TIMEOUT", "14", 1);
  setenv("NCCL_IB_RETRY_CNT", "7", 1);
  PluginDriver plugin(plugin_path_from_env(), Api::V9);
  REQUIRE(plugin.init() == ncclSuccess);
  const int a = require_device(plugin, "hda");
  const int b = require_device(plugin, "hdb");
  const std::string baseline = vroce_stats();
  const auto pairs = open_pairs(plugin, a, b, run.comms);

  PlanShape shape;
  shape.groups = run.groups;
  shape.max_single = 1 << 20;
  shape.max_multi = 64 << 10;
  TrafficOptions options;
  options.idle = nap;
  options.deadline = std::chrono::seconds(150);
  const std::string before = vroce_stats();
  const auto start = std::chrono::steady_clock::now();
  const auto runs = run_pairs(plugin, pairs, 100, shape, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string after = vroce_stats();

  uint64_t bytes = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    INFO("comm " << i << ": sender: " << runs[i].sent.error
                 << "; receiver: " << runs[i].received.error);
    CHECK(runs[i].sent.ok);
    CHECK(runs[i].received.ok);
    bytes += runs[i].received.bytes;
  }
  auto delta = [&](const char* path) { return vroce_stat(after, path) - vroce_stat(before, path); };
  const int64_t data_packets = delta("tx_packets.write") + delta("tx_packets.send");
  int64_t other_drops = 0;
  for (const char* reason :
       {"truncated", "bad_transport_version", "unknown_opcode", "bad_pad_count", "length_mismatch",
        "payload_too_large", "bad_aeth_syndrome", "unknown_qpn", "qp_not_ready", "wrong_peer",
        "psn_gap_repeat", "unexpected_response"}) {
    other_drops += delta((std::string("drops.") + reason).c_str());
  }
  std::printf(
      "FAULTS %-10s faults=%s comms=%d groups=%d MB=%.1f s=%.2f MB/s=%.1f data_packets=%lld "
      "dropped=%lld dup=%lld corrupt=%lld reordered=%lld retransmitted=%lld ack_timeouts=%lld "
      "naks=%lld bad_icrc=%lld duplicate_requests=%lld other_drops=%lld\n",
      run.name, run.faults, run.comms, run.groups, static_cast<double>(bytes) / 1e6, seconds,
      static_cast<double>(bytes) / 1e6 / seconds, static_cast<long long>(data_packets),
      static_cast<long long>(delta("faults_injected.drop")),
      static_cast<long long>(delta("faults_injected.duplicate")),
      static_cast<long long>(delta("faults_injected.corrupt")),
      static_cast<long long>(delta("faults_injected.reorder")),
      static_cast<long long>(delta("retransmitted_packets")),
      static_cast<long long>(delta("ack_timeouts")),
      static_cast<long long>(delta("naks_received.psn_sequence")),
      static_cast<long long>(delta("drops.bad_icrc")),
      static_cast<long long>(delta("duplicate_requests")), static_cast<long long>(other_drops));
  std::fflush(stdout);
  // Not one completion in error: every fault was recovered below the plugin.
  CHECK(delta("completions.retry_exc_err") == 0);
  CHECK(delta("completions.success") > 0);
  REQUIRE(bytes > 0);

  // Every comm closed by its side: nothing the plugin created for them is left.
  const std::string end = vroce_stats();
  for (const char* live : {"live.qps", "live.cqs", "live.mrs"}) {
    INFO(live);
    CHECK(vroce_stat(end, live) == vroce_stat(baseline, live));
  }
}

}  // namespace

TEST_CASE("no faults: the same four comms, the baseline of the fault runs",
          "[hardening][faults][vroce]") {
  run_with_faults({"none", "seed=20", vroce_device_list({"hda", "hdb"}), 4, 500});
  const std::string s = vroce_stats();
  for (const char* fault : {"faults_injected.drop", "faults_injected.duplicate",
                            "faults_injected.corrupt", "faults_injected.reorder"}) {
    CHECK(vroce_stat(s, fault) == 0);
  }
}

TEST_CASE("0.1% loss: four comms of verified traffic, no hang", "[hardening][faults][vroce]") {
  run_with_faults({"loss0.1%", "drop=0.001,seed=21", vroce_device_list({"hda", "hdb"}), 4, 500});
  const std::string s = vroce_stats();
  CHECK(vroce_stat(s, "faults_injected.drop") > 0);
  CHECK(vroce_stat(s, "retransmitted_packets") > 0);
}

TEST_CASE("1% loss: four comms of verified traffic, no hang", "[hardening][faults][vroce]") {
  run_with_faults({"loss1%", "drop=0.01,seed=22", vroce_device_list({"hda", "hdb"}), 4, 500});
  const std::string s = vroce_stats();
  CHECK(vroce_stat(s, "faults_injected.drop") > 0);
  CHECK(vroce_stat(s, "retransmitted_packets") > 0);
}

TEST_CASE("10% loss: four comms of verified traffic, no hang", "[hardening][faults][vroce]") {
  run_with_faults({"loss10%", "drop=0.1,seed=23", vroce_device_list({"hda", "hdb"}), 4, 200});
  const std::string s = vroce_stats();
  CHECK(vroce_stat(s, "faults_injected.drop") > 0);
  CHECK(vroce_stat(s, "retransmitted_packets") > 0);
}

TEST_CASE("reordering: four comms of verified traffic, no hang", "[hardening][faults][vroce]") {
  run_with_faults({"reorder5%", "reorder=0.05,seed=24", vroce_device_list({"hda", "hdb"}), 4, 500});
  CHECK(vroce_stat(vroce_stats(), "faults_injected.reorder") > 0);
}

TEST_CASE("duplication: four comms of verified traffic, no hang", "[hardening][faults][vroce]") {
  run_with_faults({"dup5%", "dup=0.05,seed=25", vroce_device_list({"hda", "hdb"}), 4, 500});
  const std::string s = vroce_stats();
  CHECK(vroce_stat(s, "faults_injected.duplicate") > 0);
  CHECK(vroce_stat(s, "duplicate_requests") > 0);
}

TEST_CASE("corruption: four comms of verified traffic, no hang", "[hardening][faults][vroce]") {
  run_with_faults({"corrupt1%", "corrupt=0.01,seed=26", vroce_device_list({"hda", "hdb"}), 4, 500});
  const std::string s = vroce_stats();
  CHECK(vroce_stat(s, "faults_injected.corrupt") > 0);
  CHECK(vroce_stat(s, "drops.bad_icrc") > 0);
}

TEST_CASE("all faults at once: eight comms of verified traffic, no hang",
          "[hardening][faults][vroce]") {
  run_with_faults({"mixed", "drop=0.01,reorder=0.02,dup=0.02,corrupt=0.005,seed=27",
                   vroce_device_list({"hda", "hdb"}), 8, 300});
}
