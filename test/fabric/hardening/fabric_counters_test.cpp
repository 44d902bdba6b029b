// The port's fabric counters end to end over vroce, which keeps mlx5's hw_counters and counters
// in its fake sysfs tree (VROCE_SYSFS_ROOT, read by the plugin through NCCL_ROCE_SYSFS_ROOT):
// - congestion: vroce marks a share of the ECN-capable packets CE (traffic class 106, ECT(0)),
//   the receiving port counts the marks and answers with CNPs, the sending port counts those,
//   and each comm's close-time summary (NCCL_ROCE_STATS=1) and stats file name congestion;
// - loss: with packets dropped, the close-time summaries report sequence errors or timeouts;
// - failure: with every packet dropped, the failed comm's error names the ACK timeouts as loss.
// Assertions are on counts and text, never on time.
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
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

// A private fake sysfs tree, shared by vroce (writer) and the plugin (reader).
struct SysfsRoot {
  std::string path;
  SysfsRoot() {
    char pattern[] = "/tmp/roce-fabric-counters-XXXXXX";
    const char* made = mkdtemp(pattern);
    REQUIRE(made != nullptr);
    path = made;
    setenv("VROCE_SYSFS_ROOT", path.c_str(), 1);
    setenv("NCCL_ROCE_SYSFS_ROOT", path.c_str(), 1);
  }
  ~SysfsRoot() { [[maybe_unused]] int rc = std::system(("rm -rf '" + path + "'").c_str()); }

  uint64_t hw_counter(const std::string& device, const std::string& name) const {
    std::ifstream in(path + "/class/infiniband/" + device + "/ports/1/hw_counters/" + name);
    uint64_t value = 0;
    REQUIRE(static_cast<bool>(in >> value));
    return value;
  }
};

// 67 ms ACK timeout, 7 retries: injected loss recovers without ending a comm on a loaded host.
void recovering_timers() {
  setenv("NCCL_IB_TIMEOUT", "14", 1);
  setenv("NCCL_IB_RETRY_CNT", "7", 1);
}

void log_closes() {
  setenv("NCCL_ROCE_STATS", "1", 1);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "NET", 1);
}

std::vector<PairRun> traffic(PluginDriver& plugin, const char* from, const char* to, int groups) {
  const auto pairs =
      open_pairs(plugin, require_device(plugin, from), require_device(plugin, to), 2);
  PlanShape shape;
  shape.groups = groups;
  shape.max_single = 256 << 10;
  shape.max_multi = 32 << 10;
  TrafficOptions options = napping();
  options.deadline = std::chrono::seconds(150);
  auto runs = run_pairs(plugin, pairs, 17, shape, options);
  for (size_t i = 0; i < runs.size(); ++i) {
    INFO("comm " << i << ": sender: " << runs[i].sent.error
                 << "; receiver: " << runs[i].received.error);
    CHECK(runs[i].sent.ok);
    CHECK(runs[i].received.ok);
  }
  return runs;
}

// The close-time summary lines (NCCL_ROCE_STATS=1) of comms of `direction` ("send comm to",
// "recv comm from") whose fabric report is on `device`.
std::vector<std::string> close_lines(const std::string& direction, const std::string& device) {
  std::vector<std::string> found;
  for (const auto& line : info_lines()) {
    if (line.find(direction) != std::string::npos &&
        line.find("fabric counters on " + device + " port 1 since init: ") != std::string::npos) {
      found.push_back(line);
    }
  }
  return found;
}

}  // namespace

TEST_CASE("ECN marks at the receiver and CNPs at the sender: the close reports name congestion",
          "[hardening][fabric-counters][vroce]") {
  SysfsRoot sysfs;
  recovering_timers();
  log_closes();
  const std::string stats = "/tmp/roce-fabric-counters-test." + std::to_string(getpid());
  setenv("NCCL_ROCE_STATS_FILE", (stats + ".jsonl").c_str(), 1);
  setenv("NCCL_ROCE_STATS_INTERVAL_MS", "100", 1);
  use_test_devices({"fxa", "fxb"});
  setenv("VROCE_FAULTS", "ecn=0.3,seed=9", 1);
  setenv("NCCL_IB_TC", "106", 1);  // DSCP 26 with ECT(0): ECN-capable
  {
    PluginDriver plugin(plugin_path_from_env(), Api::V11);
    REQUIRE(plugin.init() == ncclSuccess);
    traffic(plugin, "fxa", "fxb", 30);
    const std::string json = vroce_stats();
    INFO(json);
    CHECK(vroce_stat(json, "faults_injected.ecn_mark") > 0);
    // The data went fxa -> fxb: marks at the receiving port, CNPs from it, handled at the sender.
    CHECK(sysfs.hw_counter("fxb", "np_ecn_marked_roce_packets") > 0);
    CHECK(sysfs.hw_counter("fxb", "np_cnp_sent") > 0);
    CHECK(sysfs.hw_counter("fxa", "rp_cnp_handled") > 0);
    REQUIRE(plugin.finalize() == ncclSuccess);  // the last stats file write
  }
  const auto recv = close_lines("recv comm from", "fxb");
  const auto send = close_lines("send comm to", "fxa");
  REQUIRE(recv.size() == 2);
  REQUIRE(send.size() == 2);
  for (const auto& line : recv) {
    INFO(line);
    CHECK(line.find("np_ecn_marked_roce_packets +") != std::string::npos);
    CHECK(line.find("np_cnp_sent +") != std::string::npos);
    CHECK(line.find("the fabric is congested (ECN marks and CNPs): check the PFC/ECN config") !=
          std::string::npos);
  }
  for (const auto& line : send) {
    INFO(line);
    CHECK(line.find("rp_cnp_handled +") != std::string::npos);
    CHECK(line.find("the fabric is congested") != std::string::npos);
  }
  const std::string lines = read_text_file(stats + ".jsonl");
  INFO(lines.substr(0, 3000));
  CHECK(lines.find("\"fabric_counters\":{") != std::string::npos);
  CHECK(lines.find("congestion\"") != std::string::npos);  // "congestion" or "loss and ..."
  const std::string prom = read_text_file(stats + ".jsonl.prom");
  CHECK(prom.find("device=\"fxb\",port=\"1\",counter=\"np_ecn_marked_roce_packets\"}") !=
        std::string::npos);
  std::remove((stats + ".jsonl").c_str());
  std::remove((stats + ".jsonl.prom").c_str());
}

TEST_CASE("dropped packets: the close reports count sequence errors and timeouts as loss",
          "[hardening][fabric-counters][vroce]") {
  SysfsRoot sysfs;
  recovering_timers();
  log_closes();
  use_test_devices({"fxc", "fxd"});
  setenv("VROCE_FAULTS", "drop=0.02,seed=4", 1);
  {
    PluginDriver plugin(plugin_path_from_env(), Api::V10);
    REQUIRE(plugin.init() == ncclSuccess);
    traffic(plugin, "fxc", "fxd", 30);
    REQUIRE(plugin.finalize() == ncclSuccess);
  }
  CHECK(vroce_stat(vroce_stats(), "faults_injected.drop") > 0);
  const uint64_t loss = sysfs.hw_counter("fxd", "out_of_sequence") +
                        sysfs.hw_counter("fxc", "packet_seq_err") +
                        sysfs.hw_counter("fxc", "local_ack_timeout_err") +
                        sysfs.hw_counter("fxd", "local_ack_timeout_err");
  CHECK(loss > 0);
  auto lines = close_lines("send comm to", "fxc");
  const auto recv = close_lines("recv comm from", "fxd");
  lines.insert(lines.end(), recv.begin(), recv.end());
  REQUIRE(lines.size() == 4);
  int lost = 0;
  for (const auto& line : lines) {
    INFO(line);
    CHECK(line.find("congested") == std::string::npos);
    lost += line.find(": packets were lost (sequence errors, ACK timeouts, port errors)") !=
                    std::string::npos
                ? 1
                : 0;
  }
  CHECK(lost >= 1);
}

TEST_CASE("a comm that fails because every packet is lost names the timeouts in its error",
          "[hardening][fabric-counters][vroce]") {
  SysfsRoot sysfs;
  setenv("NCCL_IB_TIMEOUT", "12", 1);  // 17 ms, 2 retries: fails fast
  setenv("NCCL_IB_RETRY_CNT", "2", 1);
  // No recovery epoch: the sender of this test is never called, so it would never answer the
  // receiver's request for one (recovery_test.cpp covers a path that loses everything).
  setenv("NCCL_ROCE_FAILOVER", "0", 1);
  use_test_devices({"fxe", "fxf"});
  setenv("VROCE_FAULTS", "drop=1", 1);
  PluginDriver plugin(plugin_path_from_env(), Api::V9);
  REQUIRE(plugin.init() == ncclSuccess);
  const auto pairs =
      open_pairs(plugin, require_device(plugin, "fxe"), require_device(plugin, "fxf"), 1);
  std::vector<char> buffer(4096, 0);
  void* mh = nullptr;
  REQUIRE(plugin.reg_mr(pairs[0].recv, buffer.data(), buffer.size(), NCCL_PTR_HOST, &mh) ==
          ncclSuccess);
  reset_warn_count();
  void* data[1] = {buffer.data()};
  size_t sizes[1] = {buffer.size()};
  int tags[1] = {1};
  void* mhs[1] = {mh};
  void* request = nullptr;
  // The clear-to-send this irecv writes to the sender never arrives, nor does any ACK.
  REQUIRE(plugin.irecv(pairs[0].recv, 1, data, sizes, tags, mhs, &request) == ncclSuccess);
  REQUIRE(request != nullptr);
  int done = 0;
  CHECK(test_until_settled(plugin, request, &done) == ncclRemoteError);
  CHECK(warned("IBV_WC_RETRY_EXC_ERR"));
  CHECK(warned("fabric counters on fxf port 1 since init: ", "local_ack_timeout_err +"));
  CHECK(warned("local_ack_timeout_err +", ": packets were lost"));
  CHECK(sysfs.hw_counter("fxf", "local_ack_timeout_err") >= 3);  // retry_cnt + 1 timeouts
  CHECK(plugin.dereg_mr(pairs[0].recv, mh) == ncclSuccess);
  CHECK(plugin.close_recv(pairs[0].recv) == ncclSuccess);
  CHECK(plugin.close_send(pairs[0].send) == ncclSuccess);
}
