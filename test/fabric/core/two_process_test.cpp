// The plugin in two processes, each with its own vroce device on loopback, as two NCCL ranks:
// verified traffic for every table version, and a peer killed with SIGKILL mid-transfer, which
// the survivor must report as an error from test() within the QP's retry budget.
#include <signal.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "child_process.h"
#include "hang_bound.h"
#include "plugin_driver.h"
#include "test_addresses.h"
#include "traffic.h"

using namespace roce::test;

namespace {

std::string handle_from(ChildProcess& receiver) {
  auto line = receiver.wait_for("HANDLE ", kHangBoundMs);
  INFO("receiver output so far:\n" << receiver.output());
  REQUIRE(line);
  return line->substr(7);
}

// One connection between two processes with per-side environments; returns both outputs.
struct PairOutput {
  std::string sender;
  std::string receiver;
};

PairOutput two_process_pair(const std::string& api, const std::string& groups, const std::string& a,
                            const std::string& b, std::map<std::string, std::string> send_env = {},
                            std::map<std::string, std::string> recv_env = {}) {
  send_env["VROCE_DEVICES"] = "pca=" + a;
  recv_env["VROCE_DEVICES"] = "pcb=" + b;
  ChildProcess receiver({fabric_peer_binary(), "recv", "--device", "pcb", "--api", api, "--seed",
                         "9", "--groups", groups, "--wait-before-close"},
                        recv_env);
  const std::string handle = handle_from(receiver);
  ChildProcess sender({fabric_peer_binary(), "send", "--device", "pca", "--api", api, "--seed", "9",
                       "--groups", groups, "--handle", handle},
                      send_env);
  auto sent = sender.wait_for("OK", 180000);
  const int sender_status = sender.wait(kHangBoundMs);
  INFO("sender:\n" << sender.output());
  CHECK(sent);
  CHECK(sender_status == 0);
  // The sender has closed with its tail in flight; now the receiver may close too.
  REQUIRE(receiver.wait_for("READY_TO_CLOSE", kHangBoundMs));
  receiver.write_line("close");
  auto received = receiver.wait_for("OK", kHangBoundMs);
  const int receiver_status = receiver.wait(kHangBoundMs);
  INFO("receiver:\n" << receiver.output());
  CHECK(received);
  CHECK(receiver_status == 0);
  return {sender.output(), receiver.output()};
}

void two_process_traffic(const std::string& api, const std::string& a, const std::string& b) {
  two_process_pair(api, "120", a, b);
}

// `env` plus the NET subsystem's INFO lines (connect and accept name the ECE in force).
std::map<std::string, std::string> net_info(std::map<std::string, std::string> env = {}) {
  env["NCCL_DEBUG"] = "INFO";
  env["NCCL_DEBUG_SUBSYS"] = "NET";
  return env;
}

}  // namespace

TEST_CASE("two processes exchange verified traffic through the v8 table",
          "[fabric][process][vroce]") {
  two_process_traffic("v8", test_address(0), test_address(1));
}

TEST_CASE("two processes exchange verified traffic through the v11 table",
          "[fabric][process][vroce]") {
  two_process_traffic("v11", test_address(0), test_address(1));
}

TEST_CASE("a peer killed with SIGKILL makes test() fail within the retry budget",
          "[fabric][process][errors][vroce]") {
  // 4.096 us * 2^12 = 16.8 ms per attempt, 1 + 3 retries: well under a second of retries. The
  // peer watch is off: this is the data path's own detection (with the watch, the receiver's
  // closed socket fails the send first: hardening's peer_watch_test.cpp).
  const std::map<std::string, std::string> timers = {
      {"NCCL_IB_TIMEOUT", "12"}, {"NCCL_IB_RETRY_CNT", "3"}, {"NCCL_ROCE_PEER_WATCH", "0"}};
  auto env_with = [&](const std::string& devices) {
    auto env = timers;
    env["VROCE_DEVICES"] = devices;
    return env;
  };
  ChildProcess receiver({fabric_peer_binary(), "recv", "--device", "pcb", "--seed", "3", "--groups",
                         "1000", "--max-recvs", "1", "--post-and-hang"},
                        env_with("pcb=" + test_address(1)));
  const std::string handle = handle_from(receiver);
  ChildProcess sender(
      {fabric_peer_binary(), "send", "--device", "pca", "--seed", "3", "--groups", "1000",
       "--max-recvs", "1", "--handle", handle, "--wait-go", "--expect-error"},
      env_with("pca=" + test_address(0)));
  REQUIRE(receiver.wait_for("POSTED", kHangBoundMs));
  REQUIRE(sender.wait_for("CONNECTED", kHangBoundMs));
  // Let the clear-to-send writes land in the sender's ring, then kill the receiver.
  usleep(300 * 1000);
  CHECK(receiver.kill_and_wait(SIGKILL, kHangBoundMs) == 128 + SIGKILL);
  sender.write_line("go");
  auto error = sender.wait_for("ERROR", kHangBoundMs);
  const int status = sender.wait(kHangBoundMs);
  const std::string out = sender.output();
  INFO("sender:\n" << out);
  REQUIRE(error);
  CHECK(status == 0);
  // ncclRemoteError (6) once the retries ran out (IBV_WC_RETRY_EXC_ERR below); how long that
  // took (after_ms) is not checked: a loaded machine stretches it, and a hang has its bound.
  CHECK(error->find("result=6") != std::string::npos);
  CHECK(error->find("after_ms=") != std::string::npos);
  // The one WARN names the completion status, the QP, both GIDs and the hint.
  CHECK(out.find("IBV_WC_RETRY_EXC_ERR") != std::string::npos);
  CHECK(out.find("NCCL_IB_TIMEOUT") != std::string::npos);
  CHECK(out.find("::ffff:" + test_address(0)) != std::string::npos);
  CHECK(out.find("::ffff:" + test_address(1)) != std::string::npos);
}

TEST_CASE("ECE is exchanged and both sides run on the options both devices support",
          "[fabric][process][ece][vroce]") {
  // vroce's ECE options per process: the receiver's device reduces the sender's to the common
  // bits, and the sender sets that reduced ECE on its own QPs.
  const PairOutput out = two_process_pair("v9", "40", test_address(0), test_address(1),
                                          net_info({{"VROCE_ECE", "0x30000003"}}),
                                          net_info({{"VROCE_ECE", "0x10000006"}}));
  INFO(out.sender << out.receiver);
  CHECK(out.sender.find("connected on pca") != std::string::npos);
  CHECK(out.sender.find("ece vendor 0x15b3 options 0x10000002") != std::string::npos);
  CHECK(out.receiver.find("ece vendor 0x15b3 options 0x10000002") != std::string::npos);
}

TEST_CASE("NCCL_IB_ECE_ENABLE=0 on the sender connects without ECE on both sides",
          "[fabric][process][ece][vroce]") {
  const PairOutput out = two_process_pair("v9", "40", test_address(0), test_address(1),
                                          net_info({{"NCCL_IB_ECE_ENABLE", "0"}}), net_info());
  INFO(out.sender << out.receiver);
  CHECK(out.sender.find("no ece (NCCL_IB_ECE_ENABLE=0)") != std::string::npos);
  CHECK(out.receiver.find("accepted on pcb") != std::string::npos);
  CHECK(out.receiver.find("no ece") != std::string::npos);
  CHECK(out.receiver.find("ece vendor") == std::string::npos);
}

TEST_CASE("a receiver whose device has no ECE answers none and the sender runs without it",
          "[fabric][process][ece][vroce]") {
  const PairOutput out = two_process_pair("v9", "40", test_address(0), test_address(1), net_info(),
                                          net_info({{"VROCE_ECE", "off"}}));
  INFO(out.sender << out.receiver);
  CHECK(out.sender.find("connected on pca") != std::string::npos);
  CHECK(out.sender.find("ece vendor") == std::string::npos);
  CHECK(out.receiver.find("ece vendor") == std::string::npos);
}
