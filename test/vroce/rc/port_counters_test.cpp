// vroce's port counters in its fake sysfs tree (mlx5's hw_counters and counters, kept current
// from the engine's own counts) and its ECN fault: marked packets counted at the receiver, CNPs
// sent back and counted at the sender, no marks on traffic that is not ECN-capable, and the
// sequence-error counters under loss. Two devices in one process on its own test addresses (own
// executable, one process per case: each sets its faults before vroce reads its environment).
// Assertions are on counts, never on time.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "hang_bound.h"
#include "harness.h"
#include "test_addresses.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace vroce_test;
using namespace std::chrono_literals;

namespace {

constexpr auto kWait = roce::test::kHangBound;
constexpr unsigned kRemote =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

std::string sysfs_root() {
  return "/tmp/vroce-port-counters-test." + std::to_string(getpid());
}

// Configures vroce for this process (before its first verbs call).
void use_vroce(const char* faults) {
  setenv("VROCE_DEVICES", vroce_device_list({"ecA", "ecB"}).c_str(), 1);
  setenv("VROCE_SYSFS_ROOT", sysfs_root().c_str(), 1);
  if (faults != nullptr) {
    setenv("VROCE_FAULTS", faults, 1);
  } else {
    unsetenv("VROCE_FAULTS");
  }
  REQUIRE(std::system(("rm -rf " + sysfs_root()).c_str()) == 0);
  std::atexit([] { [[maybe_unused]] int rc = std::system(("rm -rf " + sysfs_root()).c_str()); });
}

std::string counter_file(const std::string& device, const std::string& group,
                         const std::string& name) {
  return sysfs_root() + "/class/infiniband/" + device + "/ports/1/" + group + "/" + name;
}

uint64_t counter(const std::string& device, const std::string& group, const std::string& name) {
  std::ifstream in(counter_file(device, group, name));
  REQUIRE(in.good());
  std::string text;
  std::getline(in, text);
  INFO(device << " " << name << " holds '" << text << "'");
  REQUIRE(!text.empty());
  REQUIRE(text.find_first_not_of("0123456789") == std::string::npos);
  return std::stoull(text);
}

uint64_t hw(const std::string& device, const std::string& name) {
  return counter(device, "hw_counters", name);
}

uint64_t port(const std::string& device, const std::string& name) {
  return counter(device, "counters", name);
}

// `messages` RDMA WRITEs of `bytes` from ecA to ecB, each waited for; the QPs are destroyed on
// return (which publishes the counters).
void write_traffic(uint8_t traffic_class, int messages, size_t bytes) {
  Device a("ecA");
  Device b("ecB");
  QpOptions options;
  options.traffic_class = traffic_class;
  options.timeout = 16;  // 268 ms: injected loss recovers by NAK, not by waiting
  Buffer src(a.pd, bytes, kRemote);
  Buffer dst(b.pd, bytes, kRemote);
  fill_pattern(src.data, bytes, 5);
  {
    Endpoint ea(a, options);
    Endpoint eb(b, options);
    ea.connect(eb.info());
    eb.connect(ea.info());
    for (int i = 0; i < messages; ++i) {
      ibv_sge sge = src.sge(0, bytes);
      ibv_send_wr wr{};
      wr.wr_id = static_cast<uint64_t>(i);
      wr.opcode = IBV_WR_RDMA_WRITE;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = dst.addr();
      wr.wr.rdma.rkey = dst.mr->rkey;
      ibv_send_wr* bad = nullptr;
      REQUIRE(ibv_post_send(ea.qp, &wr, &bad) == 0);
      auto wcs = wait_completions(ea.send_cq, 1, kWait);
      REQUIRE(wcs.size() == 1);
      REQUIRE(wcs[0].status == IBV_WC_SUCCESS);
    }
  }
  CHECK(find_mismatch(dst.data, bytes, 5) == -1);
}

}  // namespace

TEST_CASE("the port counters are in the fake sysfs tree under mlx5's names, data in 4-byte words",
          "[counters]") {
  use_vroce(nullptr);
  constexpr int kMessages = 20;
  constexpr size_t kBytes = 64 * 1024;
  write_traffic(0, kMessages, kBytes);
  for (const char* name : {"out_of_sequence", "packet_seq_err", "local_ack_timeout_err",
                           "implied_nak_seq_err", "duplicate_request", "rnr_nak_retry_err",
                           "np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled"}) {
    CAPTURE(name);
    hw("ecA", name);  // present and a number
    hw("ecB", name);
  }
  CHECK(hw("ecB", "np_ecn_marked_roce_packets") == 0);
  CHECK(hw("ecA", "rp_cnp_handled") == 0);
  const uint64_t payload = uint64_t{kMessages} * kBytes;
  // 16 packets per 64 KiB message at MTU 4096, each with its IP, UDP, BTH, RETH and ICRC.
  const uint64_t packets = 16 * kMessages;
  CHECK(port("ecA", "port_xmit_packets") >= packets);
  CHECK(port("ecB", "port_rcv_packets") >= packets);
  CHECK(port("ecA", "port_xmit_data") * 4 >= payload);
  CHECK(port("ecA", "port_xmit_data") * 4 < 3 * payload);  // words, not octets
  CHECK(port("ecB", "port_rcv_data") * 4 >= payload);
  CHECK(port("ecB", "port_xmit_packets") > 0);  // the ACKs
  CHECK(port("ecB", "port_rcv_errors") == 0);
}

TEST_CASE("ECN CE marks are counted at the receiver, which answers with CNPs the sender counts",
          "[counters][ecn]") {
  use_vroce("ecn=0.5,seed=3");
  write_traffic(106, 20, 64 * 1024);  // DSCP 26 with ECT(0)
  const std::string json = stats_json();
  INFO(json);
  const uint64_t marked = hw("ecB", "np_ecn_marked_roce_packets");
  const uint64_t sent = hw("ecB", "np_cnp_sent");
  const uint64_t handled = hw("ecA", "rp_cnp_handled");
  CHECK(stat(json, "faults_injected.ecn_mark") > 0);
  CHECK(marked > 0);
  CHECK(marked <= stat(json, "faults_injected.ecn_mark"));
  CHECK(sent > 0);
  CHECK(sent <= marked);  // at most one per marked packet (and per QP per interval)
  CHECK(sent == stat(json, "cnps_sent"));
  CHECK(handled > 0);
  CHECK(handled <= sent);
  CHECK(handled == stat(json, "cnps_received"));
  // Congestion is not loss: nothing was retransmitted for it.
  CHECK(hw("ecB", "out_of_sequence") == 0);
  CHECK(hw("ecA", "packet_seq_err") == 0);
  // Only data packets are marked: the ACKs ecB sent arrived unmarked at ecA.
  CHECK(hw("ecA", "np_ecn_marked_roce_packets") == 0);
}

TEST_CASE("traffic that is not ECN-capable is never marked", "[counters][ecn]") {
  use_vroce("ecn=1");
  write_traffic(104, 5, 16 * 1024);  // DSCP 26, ECN bits 00
  const std::string json = stats_json();
  INFO(json);
  CHECK(stat(json, "faults_injected.ecn_not_ect") > 0);
  CHECK(stat(json, "faults_injected.ecn_mark") == 0);
  CHECK(hw("ecB", "np_ecn_marked_roce_packets") == 0);
  CHECK(hw("ecB", "np_cnp_sent") == 0);
}

TEST_CASE("lost packets show as sequence errors at both ends", "[counters][loss]") {
  use_vroce("drop=0.03,seed=11");
  write_traffic(0, 20, 64 * 1024);
  const std::string json = stats_json();
  INFO(json);
  CHECK(hw("ecB", "out_of_sequence") > 0);
  CHECK(hw("ecA", "packet_seq_err") == stat(json, "naks_received.psn_sequence"));
  CHECK(hw("ecA", "packet_seq_err") > 0);
  CHECK(hw("ecA", "local_ack_timeout_err") == stat(json, "ack_timeouts"));
  CHECK(hw("ecB", "np_ecn_marked_roce_packets") == 0);
}

TEST_CASE("counts add to what the files held, as successive users of a port do", "[counters]") {
  use_vroce(nullptr);
  {
    Device b("ecB");  // enumeration creates the files
  }
  {
    std::ofstream out(counter_file("ecB", "counters", "port_rcv_packets"));
    out << "1000000\n";
  }
  write_traffic(0, 2, 4096);
  const uint64_t first = port("ecB", "port_rcv_packets");
  CHECK(first > 1000000);
  // A second engine of the same device (the first stopped with its last QP) continues too.
  write_traffic(0, 2, 4096);
  CHECK(port("ecB", "port_rcv_packets") > first);
  // Enumerating again leaves counter files alone.
  { Device again("ecA"); }
  CHECK(port("ecB", "port_rcv_packets") > first);
}
