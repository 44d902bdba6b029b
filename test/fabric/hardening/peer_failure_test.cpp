// A peer that dies (SIGKILL) or goes silent (100% loss) while this process has requests in
// flight to it. This process is the survivor: its test() must return an error within the QP's
// retry budget (4.096 us x 2^NCCL_IB_TIMEOUT x VROCE_TIME_SCALE per attempt, NCCL_IB_RETRY_CNT + 1
// attempts), not earlier than that budget (the retries are really made), the failed comm must
// deregister and close cleanly, and its comms to a live peer (a second device of this process)
// must keep exchanging verified data: one that was connected before the failure (its sender
// already posting, its receiver starting once the failure is detected), and one opened after it.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
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

constexpr int kIbTimeout = 16;  // 268 ms at scale 1
constexpr int kRetryCnt = 3;
constexpr double kTimeScale = 0.25;  // 67 ms per attempt, 268 ms in all

void set_timers() {
  // What is tested here is the data path's own detection (the retry budget), which is all a comm
  // has when the peer watch is off or a silent host has not yet run out its keepalive; with the
  // watch on, a killed peer's closed socket would fail the comm first (peer_watch_test.cpp).
  setenv("NCCL_ROCE_PEER_WATCH", "0", 1);
  setenv("NCCL_IB_TIMEOUT", std::to_string(kIbTimeout).c_str(), 1);
  setenv("NCCL_IB_RETRY_CNT", std::to_string(kRetryCnt).c_str(), 1);
  setenv("VROCE_TIME_SCALE", "0.25", 1);
}

std::map<std::string, std::string> child_env(const std::string& devices) {
  return {{"VROCE_DEVICES", devices},
          {"NCCL_ROCE_PEER_WATCH", "0"},
          {"NCCL_IB_TIMEOUT", std::to_string(kIbTimeout)},
          {"NCCL_IB_RETRY_CNT", std::to_string(kRetryCnt)},
          {"VROCE_TIME_SCALE", "0.25"}};
}

// Live traffic between the survivor's device and the live peer's, on a thread, from before the
// failure until after it.
struct LiveTraffic {
  PluginDriver& plugin;
  CommPair pair;
  PairRun run;
  std::thread sender;
  std::thread receiver;
  // The receiver starts once `gate` is set (the failure detected), so every byte this comm
  // carries crosses it after the failure, on QPs and a device that were there before it.
  LiveTraffic(PluginDriver& p, CommPair c, uint64_t seed, std::atomic<bool>& gate)
      : plugin(p), pair(c), gate_(gate) {
    PlanShape shape;
    shape.groups = 400;
    shape.max_single = 256 << 10;
    shape.max_multi = 32 << 10;
    TrafficOptions options;
    options.idle = nap;
    sender = std::thread([this, seed, shape, options] {
      run.sent = run_sender(plugin, pair.send, seed, shape, options);
    });
    receiver = std::thread([this, seed, shape, options, &gate] {
      while (!gate) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      run.received = run_receiver(plugin, pair.recv, seed, shape, options);
    });
  }
  void join() {
    if (sender.joinable()) {
      sender.join();
    }
    if (receiver.joinable()) {
      receiver.join();
    }
  }
  ~LiveTraffic() {  // a failed REQUIRE must not leave running (or waiting) threads behind
    gate_ = true;
    join();
  }
  std::atomic<bool>& gate_;
};

void check_live(const PairRun& run, const char* which) {
  INFO(which << ": sender: " << run.sent.error << "; receiver: " << run.received.error);
  CHECK(run.sent.ok);
  CHECK(run.received.ok);
  CHECK(run.received.bytes > 0);
}

// The detection time against the budget, printed for docs/reliability.md: a figure, never an
// assertion (a loaded 2-core machine deschedules the survivor or vroce's progress thread at
// will). What the configuration asks for is checked by count instead: the first transmission
// and each of the retry_cnt retries waited out one local ACK timeout before RETRY_EXC.
void check_detection(const char* what, double elapsed_ms, int64_t ack_timeouts) {
  const double budget = retry_budget_ms(kIbTimeout, kRetryCnt, kTimeScale);
  std::printf("DETECTION %s elapsed_ms=%.1f budget_ms=%.1f ack_timeouts=%lld\n", what, elapsed_ms,
              budget, static_cast<long long>(ack_timeouts));
  std::fflush(stdout);
  CHECK(ack_timeouts >= kRetryCnt + 1);
}

// Tests `request`, just posted to a dead or silent peer, until it fails or completes (at most
// the hang bound), and checks that it failed as it must: ncclRemoteError, not done, after the
// retries the configuration asks for (check_detection, whose line `what` names).
void expect_failure_detected(PluginDriver& plugin, void* request, const char* what) {
  const int64_t timeouts_before = vroce_stat(vroce_stats(), "ack_timeouts");
  const auto posted = Clock::now();
  int done = 0;
  const ncclResult_t result = test_until_settled(plugin, request, &done);
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - posted).count();
  CHECK_FALSE(done);
  CHECK(result == ncclRemoteError);
  check_detection(what, elapsed_ms, vroce_stat(vroce_stats(), "ack_timeouts") - timeouts_before);
}

PlanShape small_shape() {
  PlanShape shape;
  shape.groups = 100;
  shape.max_single = 256 << 10;
  shape.max_multi = 32 << 10;
  return shape;
}

}  // namespace

TEST_CASE(
    "a peer killed with SIGKILL mid-transfer: test() fails within the retry budget, the "
    "comm closes cleanly and comms to a live peer keep running",
    "[hardening][peer-failure][vroce]") {
  set_timers();
  use_test_devices({"hds", "hdl"});
  ChildProcess victim({fabric_peer_binary(), "recv", "--device", "hdv", "--seed", "31", "--groups",
                       "50", "--max-recvs", "1", "--post-and-hang"},
                      child_env(vroce_device_list({"hdv"}, 2)));
  Handle victim_handle = handle_printed_by(victim);
  INFO("victim:\n" << victim.output());

  PluginDriver plugin(plugin_path_from_env(), Api::V10);
  REQUIRE(plugin.init() == ncclSuccess);
  const int s = require_device(plugin, "hds");
  const int l = require_device(plugin, "hdl");
  void* doomed = nullptr;
  REQUIRE(connect_until_ready(plugin, s, &victim_handle, &doomed, kHangBoundMs) == ncclSuccess);
  REQUIRE(victim.wait_for("POSTED", kHangBoundMs));

  // Traffic to the live peer, under way before the failure.
  const auto before_pairs = open_pairs(plugin, s, l, 1);
  std::atomic<bool> detected{false};
  LiveTraffic live(plugin, before_pairs[0], 41, detected);

  // The victim's first receive, as its plan has it: a send the victim has cleared.
  FirstSend first = register_first_send(plugin, doomed, 31, 50);
  const PlannedMessage& m = first.message;

  REQUIRE(victim.kill_and_wait(SIGKILL, kHangBoundMs) == 128 + SIGKILL);
  reset_warn_count();

  void* request = nullptr;
  const auto post_deadline = Clock::now() + kHangBound;
  while (request == nullptr && Clock::now() < post_deadline) {
    REQUIRE(plugin.isend(doomed, first.buffer.data(), m.send_size, m.tag, first.mh, &request) ==
            ncclSuccess);
  }
  REQUIRE(request != nullptr);  // the victim's clear-to-send arrived before it died
  expect_failure_detected(plugin, request, "sigkill");
  detected = true;
  CHECK(warned("IBV_WC_RETRY_EXC_ERR"));
  CHECK(warned(test_address(2)));

  // Every later call on the failed comm reports the same error; then it closes cleanly.
  void* again = nullptr;
  CHECK(plugin.isend(doomed, first.buffer.data(), m.send_size, m.tag, first.mh, &again) ==
        ncclRemoteError);
  CHECK(again == nullptr);
  CHECK(plugin.dereg_mr(doomed, first.mh) == ncclSuccess);
  CHECK(plugin.close_send(doomed) == ncclSuccess);

  // The live peer: the comm that ran through the failure, and one opened after it.
  const auto after_pairs = open_pairs(plugin, s, l, 1);
  const auto after = run_pairs(plugin, after_pairs, 43, small_shape(), napping());
  live.join();
  check_live(live.run, "comm open through the failure");
  check_live(after[0], "comm opened after the failure");
}

TEST_CASE(
    "a peer whose packets are all lost: test() fails within the retry budget, the comm "
    "closes cleanly and comms to a live peer keep running",
    "[hardening][peer-failure][vroce]") {
  set_timers();
  use_test_devices({"hds", "hdl"});
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const int s = require_device(plugin, "hds");
  const int l = require_device(plugin, "hdl");

  // The silent peer sends to us through a black hole: no data, no ACK of our clear-to-send.
  Handle handle;
  void* listen_comm = nullptr;
  REQUIRE(plugin.listen(s, &handle, &listen_comm) == ncclSuccess);
  auto env = child_env(vroce_device_list({"hdv"}, 2));
  env["VROCE_FAULTS"] = "drop=1";
  ChildProcess silent(
      {fabric_peer_binary(), "send", "--device", "hdv", "--seed", "32", "--groups", "50",
       "--max-recvs", "1", "--handle", handle_to_hex(handle), "--expect-error"},
      env);
  void* doomed = nullptr;
  REQUIRE(accept_until_ready(plugin, listen_comm, &doomed, kHangBoundMs) == ncclSuccess);
  REQUIRE(plugin.close_listen(listen_comm) == ncclSuccess);

  const auto before_pairs = open_pairs(plugin, s, l, 1);
  std::atomic<bool> detected{false};
  LiveTraffic live(plugin, before_pairs[0], 51, detected);

  PlanShape silent_shape;
  silent_shape.groups = 50;
  silent_shape.max_recvs = 1;
  const PlannedMessage m = make_plan(32, silent_shape)[0].entries[0];
  std::vector<uint8_t> buffer(std::max<size_t>(m.recv_size, 1), 0);
  void* mh = nullptr;
  REQUIRE(plugin.reg_mr(doomed, buffer.data(), buffer.size(), NCCL_PTR_HOST, &mh) == ncclSuccess);
  reset_warn_count();
  void* data[1] = {buffer.data()};
  size_t sizes[1] = {m.recv_size};
  int tags[1] = {m.tag};
  void* mhs[1] = {mh};
  void* request = nullptr;
  REQUIRE(plugin.irecv(doomed, 1, data, sizes, tags, mhs, &request) == ncclSuccess);
  REQUIRE(request != nullptr);
  expect_failure_detected(plugin, request, "loss100");
  detected = true;
  CHECK(warned("IBV_WC_RETRY_EXC_ERR"));

  void* again = nullptr;
  CHECK(plugin.irecv(doomed, 1, data, sizes, tags, mhs, &again) == ncclRemoteError);
  CHECK(plugin.dereg_mr(doomed, mh) == ncclSuccess);
  CHECK(plugin.close_recv(doomed) == ncclSuccess);

  // The silent peer saw its own sends fail the same way (our ACKs reach it, its data does not).
  auto error = silent.wait_for("ERROR", kHangBoundMs);
  INFO("silent peer:\n" << silent.output());
  CHECK(error);
  CHECK(silent.wait(kHangBoundMs) == 0);

  const auto after_pairs = open_pairs(plugin, s, l, 1);
  const auto after = run_pairs(plugin, after_pairs, 53, small_shape(), napping());
  live.join();
  check_live(live.run, "comm open through the failure");
  check_live(after[0], "comm opened after the failure");
}
