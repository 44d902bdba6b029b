// Recovery epochs (docs/design.md, "Recovery epochs"), black-box through the ncclNet API over
// vroce: a connection whose data QPs fail because a port went DOWN for longer than the retry
// budget (IBV_EVENT_PORT_ERR injected through vroce's test hook; vroce's port sends and receives
// nothing while it is DOWN) is not failed as it is with NCCL_ROCE_FAILOVER=0 (link_flap_test.cpp):
// - one port per side: the comm waits for the port to be ACTIVE again, makes its QPs anew, resends
//   what did not arrive, and both sides finish their plan with every byte right;
// - the wait is bounded by NCCL_ROCE_RECOVERY_TIMEOUT_S, past which the comm fails naming it;
// - a path that loses everything with its ports ACTIVE (no port to wait for) still fails;
// - a virtual NIC (two fused devices per side) carries on over the member that is up, with nothing
//   lost, and takes the member back (rejoin) once its port is ACTIVE again; also with two QPs per
//   member and split messages, with both of the sender's members down (the connection waits for
//   one), and with a member of the receiver's NIC down (each case with member 0 and member 1 where
//   it matters: member 0 carries the clear-to-send ring).
// The retry budget is made small (NCCL_IB_TIMEOUT=14, NCCL_IB_RETRY_CNT=3, VROCE_TIME_SCALE=0.25:
// about 67 ms) and the outages are many times longer, so the budget is really exhausted; that is
// checked by count (vroce's ack_timeouts), never by time. Sleeps only let something happen; every
// wait gives up at the hang bound; figures are printed (RECOVERY lines), never asserted.
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hang_bound.h"
#include "hardening_support.h"
#include "test_addresses.h"
#include "test_backend.h"

using roce::test::test_address;
using roce::test::test_device_name;
using roce::test::use_test_devices;
using roce::test::vroce_device_list;

using namespace roce::test;

namespace {

using Clock = std::chrono::steady_clock;

// 67 ms x 0.25 per attempt, 3 retries: 67 ms in all before RETRY_EXC (as link_flap_test.cpp).
constexpr int kIbTimeout = 14;
constexpr int kRetryCnt = 3;
constexpr double kTimeScale = 0.25;

void small_retry_budget() {
  setenv("NCCL_IB_TIMEOUT", std::to_string(kIbTimeout).c_str(), 1);
  setenv("NCCL_IB_RETRY_CNT", std::to_string(kRetryCnt).c_str(), 1);
  setenv("VROCE_TIME_SCALE", "0.25", 1);
}

// Sets an environment variable for a scope (before the plugin's init, which reads it) and puts
// back what was there, so a run of the whole binary in one process leaves the next case as it
// found it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
    }
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

PlanShape flap_shape(int groups) {
  PlanShape shape;
  shape.groups = groups;
  shape.max_single = 256 << 10;
  shape.max_multi = 32 << 10;
  return shape;
}

// A pair's sender and receiver on their own threads, started at once (link_flap_test.cpp's). Each
// stops when the other has failed (as NCCL's ranks abort together); the receiver closes only after
// the sender has. finished() says both sides are done, so a wait for something the traffic should
// cause can end when the traffic ended without it.
struct Traffic {
  PluginDriver& plugin;
  CommPair pair;
  PairRun run;
  std::atomic<bool> sender_failed{false};
  std::atomic<bool> receiver_failed{false};
  std::atomic<bool> sender_closed{false};
  std::atomic<bool> receiver_closed{false};
  std::thread sender;
  std::thread receiver;
  Traffic(PluginDriver& p, CommPair c, uint64_t seed, const PlanShape& shape) : plugin(p), pair(c) {
    sender = std::thread([this, seed, shape] {
      TrafficOptions options = napping();
      options.peer_failed = &receiver_failed;
      options.failed = &sender_failed;
      run.sent = run_sender(plugin, pair.send, seed, shape, options);
      sender_failed = !run.sent.ok;
      sender_closed = true;
    });
    receiver = std::thread([this, seed, shape] {
      TrafficOptions options = napping();
      options.peer_failed = &sender_failed;
      options.failed = &receiver_failed;
      options.before_close = [this] {
        while (!sender_closed) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      };
      run.received = run_receiver(plugin, pair.recv, seed, shape, options);
      receiver_failed = !run.received.ok;
      receiver_closed = true;
    });
  }
  bool finished() const { return sender_closed && receiver_closed; }
  void join() {
    if (sender.joinable()) {
      sender.join();
    }
    if (receiver.joinable()) {
      receiver.join();
    }
  }
  ~Traffic() { join(); }
};

// Waits (a generous bound, not a timing check) until vroce has carried `bytes` more payload than
// in `before`, so the link goes down with the transfer under way.
void wait_for_payload(const std::string& before, int64_t bytes) {
  const auto give_up = Clock::now() + kHangBound;
  while (vroce_stat(vroce_stats(), "rx_payload_bytes") - vroce_stat(before, "rx_payload_bytes") <
             bytes &&
         Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Waits until vroce's ack_timeouts grew by the whole retry budget's count since `before` (the
// first transmission and every retry waited out one local ACK timeout: RETRY_EXC is due), or the
// traffic ended (a Traffic or a Stream: its finished()), or the hang bound. Returns the growth.
template <typename Run>
int64_t wait_for_budget_exhausted(const std::string& before, const Run& traffic) {
  const auto give_up = Clock::now() + kHangBound;
  int64_t grown = 0;
  while (true) {
    grown = vroce_stat(vroce_stats(), "ack_timeouts") - vroce_stat(before, "ack_timeouts");
    if (grown >= kRetryCnt + 1 || traffic.finished() || Clock::now() >= give_up) {
      return grown;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int64_t grown(const std::string& before, const std::string& after, const std::string& stat) {
  return vroce_stat(after, stat) - vroce_stat(before, stat);
}

// One port per side, the port of `down` (the sender's or the receiver's device) DOWN for several
// times the retry budget while the pair streams at full window, then ACTIVE again: recovery.
void one_port_recovery(const char* sender_name, const char* receiver_name, const char* down,
                       uint64_t seed) {
  small_retry_budget();
  use_test_devices({sender_name, receiver_name});
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const int from = require_device(plugin, sender_name);
  const int to = require_device(plugin, receiver_name);
  const auto pairs = open_pairs(plugin, from, to, 1);
  reset_warn_count();
  const std::string before = vroce_stats();
  int64_t timeouts = 0;
  double outage_ms = 0;
  {
    Traffic traffic(plugin, pairs[0], seed, flap_shape(5000));  // still under way after the outage
    wait_for_payload(before, 1 << 20);
    REQUIRE(inject_port_event(down, IBV_EVENT_PORT_ERR) >= 1);
    const auto went_down = Clock::now();
    // Several times the budget, and the budget's count of ACK timeouts really waited out: the
    // QPs have failed (RETRY_EXC) before the port comes back.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    timeouts = wait_for_budget_exhausted(before, traffic);
    outage_ms = std::chrono::duration<double, std::milli>(Clock::now() - went_down).count();
    REQUIRE(inject_port_event(down, IBV_EVENT_PORT_ACTIVE) >= 1);
    traffic.join();
    INFO("sender: " << traffic.run.sent.error << "; receiver: " << traffic.run.received.error);
    CHECK(timeouts >= kRetryCnt + 1);
    CHECK(traffic.run.sent.ok);
    CHECK(traffic.run.received.ok);  // every size and byte checked by the traffic helpers
    CHECK(traffic.run.received.bytes > 0);
    CHECK(traffic.run.sent.close_result == ncclSuccess);
    CHECK(traffic.run.received.close_result == ncclSuccess);
  }
  const std::string after = vroce_stats();
  const int64_t lost = grown(before, after, "drops.link_down");
  std::printf(
      "RECOVERY one-port down=%s outage_ms=%.1f budget_ms=%.1f ack_timeouts=%lld lost=%lld "
      "retransmitted=%lld\n",
      down, outage_ms, retry_budget_ms(kIbTimeout, kRetryCnt, kTimeScale),
      static_cast<long long>(grown(before, after, "ack_timeouts")), static_cast<long long>(lost),
      static_cast<long long>(grown(before, after, "retransmitted_packets")));
  CHECK(lost > 0);  // the outage was real
  CHECK(warned("dev " + std::string(down) + " port 1", "IBV_EVENT_PORT_ERR"));
  CHECK(warned("recovered", "epoch"));
  CHECK_FALSE(warned("NCCL_ROCE_RECOVERY_TIMEOUT_S"));
}

// One port per side, the port of `down` DOWN and left down under a stream, with
// NCCL_ROCE_RECOVERY_TIMEOUT_S=1: the connection fails at the bound, naming it; then the port
// comes back and a new connection works.
void recovery_bound(const char* sender_name, const char* receiver_name, const char* down,
                    uint64_t seed) {
  small_retry_budget();
  ScopedEnv bound("NCCL_ROCE_RECOVERY_TIMEOUT_S", "1");
  use_test_devices({sender_name, receiver_name});
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const int from = require_device(plugin, sender_name);
  const int to = require_device(plugin, receiver_name);
  const auto pairs = open_pairs(plugin, from, to, 1);
  reset_warn_count();
  const std::string before = vroce_stats();
  double elapsed_ms = 0;
  {
    Traffic traffic(plugin, pairs[0], seed, flap_shape(100000));  // runs until the bound fails it
    wait_for_payload(before, 1 << 20);
    REQUIRE(inject_port_event(down, IBV_EVENT_PORT_ERR) >= 1);
    const auto went_down = Clock::now();
    traffic.join();  // bounded: the traffic helpers' watchdog, if the plugin never gives up
    elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - went_down).count();
    INFO("sender: " << traffic.run.sent.error << "; receiver: " << traffic.run.received.error);
    // One side fails with the plugin's error (not the helpers' watchdog); the other stops.
    CHECK_FALSE((traffic.run.sent.ok && traffic.run.received.ok));
    CHECK((traffic.run.sent.result != ncclSuccess || traffic.run.received.result != ncclSuccess));
    CHECK(traffic.run.sent.close_result == ncclSuccess);
    CHECK(traffic.run.received.close_result == ncclSuccess);
  }
  const std::string after = vroce_stats();
  std::printf(
      "RECOVERY bound down=%s elapsed_ms=%.1f bound_ms=1000 budget_ms=%.1f ack_timeouts=%lld\n",
      down, elapsed_ms, retry_budget_ms(kIbTimeout, kRetryCnt, kTimeScale),
      static_cast<long long>(grown(before, after, "ack_timeouts")));
  CHECK(grown(before, after, "ack_timeouts") >= kRetryCnt + 1);
  CHECK(grown(before, after, "drops.link_down") > 0);
  CHECK(warned("NCCL_ROCE_RECOVERY_TIMEOUT_S"));
  CHECK(warned("dev " + std::string(down) + " port 1", "IBV_EVENT_PORT_ERR"));
  CHECK_FALSE(warned("recovered", "epoch"));  // no port came back: nothing to recover on

  REQUIRE(inject_port_event(down, IBV_EVENT_PORT_ACTIVE) >= 1);
  const auto fresh = open_pairs(plugin, from, to, 1);
  const auto runs = run_pairs(plugin, fresh, seed + 1, flap_shape(50), napping());
  INFO("fresh sender: " << runs[0].sent.error << "; receiver: " << runs[0].received.error);
  CHECK(runs[0].sent.ok);
  CHECK(runs[0].received.ok);
}

// ---- A stream that leaves its comms open (the traffic helpers close theirs when done). ----

constexpr size_t kSlotBytes = 256 << 10;
constexpr int kWindow = 8;
constexpr int kTag = 7;
constexpr uint8_t kCanary = 0xa5;

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t message_key(uint64_t seed, int index) {
  return splitmix(seed * uint64_t{0x100000001b3} ^
                  static_cast<uint64_t>(static_cast<unsigned>(index)));
}

// A fifth of the messages small (one packet or inlined, zero bytes included), the others up to a
// slot (many packets).
size_t message_size(uint64_t seed, int index) {
  const uint64_t r = splitmix(message_key(seed, index));
  return r % 5 == 0 ? (r >> 8) % 4097 : (r >> 8) % (kSlotBytes + 1);
}

void fill_pattern(uint8_t* out, size_t size, uint64_t key) {
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t w = splitmix(key + i / 8);
    std::memcpy(out + i, &w, std::min<size_t>(8, size - i));
  }
}

// Offset of the first wrong byte (pattern up to `size`, canary after it up to the slot's end),
// or -1.
long long find_mismatch(const uint8_t* data, size_t size, uint64_t key) {
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t w = splitmix(key + i / 8);
    const size_t len = std::min<size_t>(8, size - i);
    for (size_t k = 0; k < len; ++k) {
      if (data[i + k] != reinterpret_cast<const uint8_t*>(&w)[k]) {
        return static_cast<long long>(i + k);
      }
    }
  }
  for (size_t i = size; i < kSlotBytes; ++i) {
    if (data[i] != kCanary) {
      return static_cast<long long>(i);
    }
  }
  return -1;
}

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

// One arena of kWindow slots per side, registered on the pair's comms for the whole test.
struct StreamArenas {
  PluginDriver& plugin;
  CommPair pair;
  std::unique_ptr<uint8_t, FreeDeleter> send_arena{
      static_cast<uint8_t*>(std::aligned_alloc(4096, kSlotBytes* kWindow))};
  std::unique_ptr<uint8_t, FreeDeleter> recv_arena{
      static_cast<uint8_t*>(std::aligned_alloc(4096, kSlotBytes* kWindow))};
  void* send_mh = nullptr;
  void* recv_mh = nullptr;
  StreamArenas(PluginDriver& p, CommPair c) : plugin(p), pair(c) {
    REQUIRE(plugin.reg_mr(pair.send, send_arena.get(), kSlotBytes * kWindow, NCCL_PTR_HOST,
                          &send_mh) == ncclSuccess);
    REQUIRE(plugin.reg_mr(pair.recv, recv_arena.get(), kSlotBytes * kWindow, NCCL_PTR_HOST,
                          &recv_mh) == ncclSuccess);
  }
  // Deregisters both (before the comms are closed); returns the first error.
  ncclResult_t release() {
    ncclResult_t r = ncclSuccess;
    if (send_mh != nullptr) {
      r = plugin.dereg_mr(pair.send, send_mh);
      send_mh = nullptr;
    }
    if (recv_mh != nullptr) {
      const ncclResult_t q = plugin.dereg_mr(pair.recv, recv_mh);
      recv_mh = nullptr;
      r = r != ncclSuccess ? r : q;
    }
    return r;
  }
};

struct SideRun {
  bool ok = false;
  std::string error;
  ncclResult_t result = ncclSuccess;
  uint64_t bytes = 0;
};

std::string fail_text(const char* what, ncclResult_t r, int index) {
  return std::string(what) + " returned ncclResult_t " + std::to_string(static_cast<int>(r)) +
         " at message " + std::to_string(index);
}

// `count` messages (single receives of a slot, each send of message_size bytes) over an open pair,
// the sender and the receiver on their own threads with up to kWindow requests in flight each;
// the receiver checks every reported size, every byte and the canary after it. Nothing is left in
// flight and the comms stay open. A side stops when the other has failed, or at the hang bound.
struct Stream {
  PluginDriver& plugin;
  StreamArenas& arenas;
  uint64_t seed;
  int count;
  SideRun sent;
  SideRun received;
  std::atomic<bool> sender_failed{false};
  std::atomic<bool> receiver_failed{false};
  std::atomic<bool> sender_done{false};
  std::atomic<bool> receiver_done{false};
  std::thread sender;
  std::thread receiver;

  Stream(PluginDriver& p, StreamArenas& a, uint64_t s, int n)
      : plugin(p), arenas(a), seed(s), count(n) {
    sender = std::thread([this] {
      send_side();
      sender_failed = !sent.ok;
      sender_done = true;
    });
    receiver = std::thread([this] {
      receive_side();
      receiver_failed = !received.ok;
      receiver_done = true;
    });
  }
  // Both sides are done (a wait for something the stream should cause can end without it).
  bool finished() const { return sender_done && receiver_done; }
  void join() {
    if (sender.joinable()) {
      sender.join();
    }
    if (receiver.joinable()) {
      receiver.join();
    }
  }
  ~Stream() { join(); }
  bool ok() const { return sent.ok && received.ok; }

  void send_side() {
    SideRun& out = sent;
    struct Posted {
      void* request;
      int index;
      size_t size;
    };
    std::deque<Posted> in_flight;
    const auto deadline = Clock::now() + kHangBound;
    auto stopped = [&](const std::string& what) {
      if (receiver_failed) {
        out.error = "stopped " + what + ": the other side failed";
        return true;
      }
      if (Clock::now() > deadline) {
        out.error = "timed out " + what;
        return true;
      }
      return false;
    };
    auto poll_front = [&] {
      int done = 0;
      int size = -1;
      const ncclResult_t r = plugin.test(in_flight.front().request, &done, &size);
      if (r != ncclSuccess) {
        out.error = fail_text("test (send)", r, in_flight.front().index);
        out.result = r;
        return false;
      }
      if (!done) {
        nap();
        return true;
      }
      if (static_cast<size_t>(size) != in_flight.front().size) {
        out.error = "send of message " + std::to_string(in_flight.front().index) + " reported " +
                    std::to_string(size) + " bytes, sent " + std::to_string(in_flight.front().size);
        return false;
      }
      out.bytes += in_flight.front().size;
      in_flight.pop_front();
      return true;
    };
    for (int i = 0; i < count; ++i) {
      // At most kWindow - 1 in flight: the slot of message i - kWindow is free.
      while (in_flight.size() >= static_cast<size_t>(kWindow)) {
        if (!poll_front() || stopped("waiting for sends")) {
          return;
        }
      }
      uint8_t* p = arenas.send_arena.get() + static_cast<size_t>(i % kWindow) * kSlotBytes;
      const size_t size = message_size(seed, i);
      fill_pattern(p, size, message_key(seed, i));
      for (;;) {
        void* request = nullptr;
        const ncclResult_t r =
            plugin.isend(arenas.pair.send, p, size, kTag, arenas.send_mh, &request);
        if (r != ncclSuccess) {
          out.error = fail_text("isend", r, i);
          out.result = r;
          return;
        }
        if (request != nullptr) {
          in_flight.push_back({request, i, size});
          break;
        }
        if (!in_flight.empty()) {
          if (!poll_front()) {
            return;
          }
        } else {
          nap();
        }
        if (stopped("waiting for a clear-to-send at message " + std::to_string(i))) {
          return;
        }
      }
    }
    while (!in_flight.empty()) {
      if (!poll_front() || stopped("draining sends")) {
        return;
      }
    }
    out.ok = true;
  }

  void receive_side() {
    SideRun& out = received;
    struct Posted {
      void* request;
      int index;
    };
    std::deque<Posted> in_flight;
    const auto deadline = Clock::now() + kHangBound;
    auto stopped = [&](const std::string& what) {
      if (sender_failed) {
        out.error = "stopped " + what + ": the other side failed";
        return true;
      }
      if (Clock::now() > deadline) {
        out.error = "timed out " + what;
        return true;
      }
      return false;
    };
    auto slot = [&](int index) {
      return arenas.recv_arena.get() + static_cast<size_t>(index % kWindow) * kSlotBytes;
    };
    auto poll_front = [&] {
      int done = 0;
      int sizes[1] = {-1};
      const int index = in_flight.front().index;
      const ncclResult_t r = plugin.test(in_flight.front().request, &done, sizes);
      if (r != ncclSuccess) {
        out.error = fail_text("test (recv)", r, index);
        out.result = r;
        return false;
      }
      if (!done) {
        nap();
        return true;
      }
      in_flight.pop_front();
      const size_t expected = message_size(seed, index);
      if (sizes[0] < 0 || static_cast<size_t>(sizes[0]) != expected) {
        out.error = "message " + std::to_string(index) + ": test reported " +
                    std::to_string(sizes[0]) + " bytes, sent " + std::to_string(expected);
        return false;
      }
      if (const long long bad = find_mismatch(slot(index), expected, message_key(seed, index));
          bad >= 0) {
        out.error = "message " + std::to_string(index) + " of " + std::to_string(expected) +
                    " bytes: wrong byte at offset " + std::to_string(bad) + " of the slot";
        return false;
      }
      out.bytes += expected;
      return true;
    };
    for (int i = 0; i < count; ++i) {
      while (in_flight.size() >= static_cast<size_t>(kWindow)) {
        if (!poll_front() || stopped("waiting for receives")) {
          return;
        }
      }
      uint8_t* p = slot(i);
      std::memset(p, kCanary, kSlotBytes);
      void* data = p;
      size_t size = kSlotBytes;
      int tag = kTag;
      void* mh = arenas.recv_mh;
      for (;;) {
        void* request = nullptr;
        const ncclResult_t r = plugin.irecv(arenas.pair.recv, 1, &data, &size, &tag, &mh, &request);
        if (r != ncclSuccess) {
          out.error = fail_text("irecv", r, i);
          out.result = r;
          return;
        }
        if (request != nullptr) {
          in_flight.push_back({request, i});
          break;
        }
        if (!in_flight.empty()) {
          if (!poll_front()) {
            return;
          }
        } else {
          nap();
        }
        if (stopped("posting a receive at message " + std::to_string(i))) {
          return;
        }
      }
    }
    while (!in_flight.empty()) {
      if (!poll_front() || stopped("draining receives")) {
        return;
      }
    }
    out.ok = true;
  }
};

// Deregisters the stream's arenas and closes the pair (a test that stops early); the closes must
// succeed whatever happened before.
void release_and_close(PluginDriver& plugin, StreamArenas& arenas, const CommPair& pair) {
  CHECK(arenas.release() == ncclSuccess);
  CHECK(plugin.close_send(pair.send) == ncclSuccess);
  CHECK(plugin.close_recv(pair.recv) == ncclSuccess);
}

// The plugin's WARN lines so far, printed when a stream failed: where each side's epoch stood.
void print_warns(const char* why) {
  std::printf("%s; the plugin's WARN lines:\n", why);
  for (const auto& line : warn_lines()) {
    std::printf("  %s\n", line.c_str());
  }
}

// vroce's fake sysfs tree (VROCE_SYSFS_ROOT, which the plugin reads through
// NCCL_ROCE_SYSFS_ROOT), for its per-port counters (port_xmit_packets: what one device sent).
// Set before the plugin loads vroce.
struct SysfsRoot {
  std::string path;
  SysfsRoot() {
    char pattern[] = "/tmp/roce-recovery-XXXXXX";
    const char* made = mkdtemp(pattern);
    REQUIRE(made != nullptr);
    path = made;
    setenv("VROCE_SYSFS_ROOT", path.c_str(), 1);
    setenv("NCCL_ROCE_SYSFS_ROOT", path.c_str(), 1);
  }
  ~SysfsRoot() { [[maybe_unused]] int rc = std::system(("rm -rf '" + path + "'").c_str()); }
  // The published value (vroce writes the files at most 100 ms after a change while its engine
  // runs), or -1 when unreadable.
  long long port_counter(const std::string& device, const std::string& name) const {
    std::ifstream in(path + "/class/infiniband/" + device + "/ports/1/counters/" + name);
    long long value = -1;
    in >> value;
    return in ? value : -1;
  }
};

// ---- Virtual NICs: two fused devices per side. ----

struct FusedNics {
  int left = -1;   // the sender's: members a, b (member 0 first)
  int right = -1;  // the receiver's: members c, d
};

FusedNics make_fused_nics(PluginDriver& plugin, const char* a, const char* b, const char* c,
                          const char* d) {
  FusedNics nics;
  REQUIRE(plugin.make_vdevice(&nics.left, {require_device(plugin, a), require_device(plugin, b)}) ==
          ncclSuccess);
  REQUIRE(plugin.make_vdevice(
              &nics.right, {require_device(plugin, c), require_device(plugin, d)}) == ncclSuccess);
  Properties props;
  REQUIRE(plugin.properties(nics.left, &props) == ncclSuccess);
  REQUIRE(props.vdev_count == 2);
  REQUIRE(plugin.properties(nics.right, &props) == ncclSuccess);
  REQUIRE(props.vdev_count == 2);
  return nics;
}

struct Rejoin {
  int rounds = 0;
  bool streams_ok = true;
  bool logged = false;
};

// Streams of 64 messages on the pair's comms, each checked, until a rejoin is logged (at the hang
// bound at most) and one more after it: a member left out is taken back at the sender's next call
// once its port is ACTIVE, no sooner than the rejoin backoff after it was left out. Call it with
// the WARN count reset just before the port came back.
Rejoin stream_until_rejoin(PluginDriver& plugin, StreamArenas& arenas, uint64_t seed) {
  Rejoin out;
  const auto give_up = Clock::now() + kHangBound;
  bool after_rejoin = false;
  while (out.streams_ok && !after_rejoin && Clock::now() < give_up) {
    const bool rejoined = warned("rejoin");
    Stream stream(plugin, arenas, seed + static_cast<uint64_t>(out.rounds), 64);
    stream.join();
    ++out.rounds;
    INFO("round " << out.rounds << ": sender: " << stream.sent.error
                  << "; receiver: " << stream.received.error);
    CHECK(stream.sent.ok);
    CHECK(stream.received.ok);
    out.streams_ok = stream.ok();
    after_rejoin = rejoined;
  }
  out.logged = warned("rejoin");
  return out;
}

// The whole traffic plan (multi-receives of up to 8 tagged entries, flushes, the tail in flight at
// close) on the pair's comms once the stream's arenas are released; it closes them.
void plan_and_close(PluginDriver& plugin, StreamArenas& arenas, const CommPair& pair, uint64_t seed,
                    int groups) {
  CHECK(arenas.release() == ncclSuccess);
  Traffic traffic(plugin, pair, seed, flap_shape(groups));
  traffic.join();
  INFO("plan: sender: " << traffic.run.sent.error << "; receiver: " << traffic.run.received.error);
  if (!traffic.run.sent.ok || !traffic.run.received.ok) {
    print_warns("the plan failed");
  }
  CHECK(traffic.run.sent.ok);
  CHECK(traffic.run.received.ok);
  CHECK(traffic.run.sent.close_result == ncclSuccess);
  CHECK(traffic.run.received.close_result == ncclSuccess);
}

// What `device` has sent (port_xmit_packets) once it rose above `floor`, waiting at the hang
// bound at most (vroce publishes its counters within 100 ms of a change); no wait when `wait` is
// false (nothing would move it). -1 when unreadable.
long long xmit_packets_above(const SysfsRoot& sysfs, const std::string& device, long long floor,
                             bool wait) {
  long long value = sysfs.port_counter(device, "port_xmit_packets");
  const auto give_up = Clock::now() + kHangBound;
  while (wait && floor >= 0 && value <= floor && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    value = sysfs.port_counter(device, "port_xmit_packets");
  }
  return value;
}

// Both members of the sender's virtual NIC (names[0], names[1]; the receiver's names[2],
// names[3]) DOWN under a stream for a second and past the retry budget's count of ACK timeouts:
// no port to carry on over, so the connection waits. Then member `back_member` comes back ACTIVE
// and the stream finishes over it alone; then the other comes back and rejoins.
void sender_members_all_down(const std::array<const char*, 4>& names, size_t back_member,
                             uint64_t seed) {
  small_retry_budget();
  SysfsRoot sysfs;
  use_test_devices({names[0], names[1], names[2], names[3]});
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const FusedNics nics = make_fused_nics(plugin, names[0], names[1], names[2], names[3]);
  const auto pairs = open_pairs(plugin, nics.left, nics.right, 1);
  const CommPair& pair = pairs[0];
  StreamArenas arenas(plugin, pair);
  const char* const kBack = names[back_member];       // comes back first
  const char* const kLater = names[1 - back_member];  // comes back after the stream
  const std::string back = test_device_name(kBack);
  const std::string later = test_device_name(kLater);

  // 1. Both DOWN for a second and the retry budget's count of ACK timeouts (no port to carry on
  // over: the connection waits), then one ACTIVE again.
  reset_warn_count();
  const std::string before = vroce_stats();
  int64_t timeouts = 0;
  double outage_ms = 0;
  bool finished_in_outage = false;
  {
    Stream stream(plugin, arenas, seed, 1500);
    wait_for_payload(before, 1 << 20);
    REQUIRE(inject_port_event(names[0], IBV_EVENT_PORT_ERR) >= 1);
    REQUIRE(inject_port_event(names[1], IBV_EVENT_PORT_ERR) >= 1);
    const auto went_down = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    timeouts = wait_for_budget_exhausted(before, stream);
    outage_ms = std::chrono::duration<double, std::milli>(Clock::now() - went_down).count();
    finished_in_outage = stream.finished();  // with no port up nothing can finish it but a failure
    REQUIRE(inject_port_event(kBack, IBV_EVENT_PORT_ACTIVE) >= 1);
    stream.join();
    INFO("sender: " << stream.sent.error << "; receiver: " << stream.received.error);
    CHECK(timeouts >= kRetryCnt + 1);
    CHECK_FALSE(finished_in_outage);
    CHECK(stream.sent.ok);
    CHECK(stream.received.ok);  // every size, byte and canary checked
    CHECK(stream.received.bytes == stream.sent.bytes);
    if (!stream.ok()) {
      print_warns("the stream failed");
      release_and_close(plugin, arenas, pair);
      return;
    }
  }
  const std::string recovered = vroce_stats();
  std::printf(
      "RECOVERY vnic-both-down back=%s outage_ms=%.1f budget_ms=%.1f ack_timeouts=%lld lost=%lld "
      "retransmitted=%lld\n",
      back.c_str(), outage_ms, retry_budget_ms(kIbTimeout, kRetryCnt, kTimeScale),
      static_cast<long long>(grown(before, recovered, "ack_timeouts")),
      static_cast<long long>(grown(before, recovered, "drops.link_down")),
      static_cast<long long>(grown(before, recovered, "retransmitted_packets")));
  CHECK(grown(before, recovered, "drops.link_down") > 0);  // the outage was real
  CHECK(warned("dev " + back + " port 1", "IBV_EVENT_PORT_ERR"));
  CHECK(warned("dev " + later + " port 1", "IBV_EVENT_PORT_ERR"));
  CHECK(warned("recovered", "epoch"));
  // The sender's WARN: it carries on over the member that came back, the other left out.
  CHECK(any_line_contains(warn_lines(),
                          {"recovered", "carries on over " + back + " port 1", "left out", later}));
  CHECK_FALSE(warned("NCCL_ROCE_RECOVERY_TIMEOUT_S"));

  // 2. The other ACTIVE again: it rejoins; then the traffic plan on the same comms, which closes
  // them.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let vroce publish the counter
  const long long sent_before = sysfs.port_counter(later, "port_xmit_packets");
  reset_warn_count();
  REQUIRE(inject_port_event(kLater, IBV_EVENT_PORT_ACTIVE) >= 1);
  const Rejoin rejoin = stream_until_rejoin(plugin, arenas, seed + 100);
  CHECK(warned("dev " + later + " port 1", "IBV_EVENT_PORT_ACTIVE"));
  CHECK(rejoin.logged);
  CHECK(any_line_contains(warn_lines(), {"rejoin", later}));
  if (!rejoin.streams_ok) {
    release_and_close(plugin, arenas, pair);
    return;
  }
  plan_and_close(plugin, arenas, pair, seed + 2, 300);
  const long long sent_after = xmit_packets_above(sysfs, later, sent_before, rejoin.logged);
  std::printf("RECOVERY vnic-both-down rejoin=%s rounds=%d xmit_packets_before=%lld after=%lld\n",
              later.c_str(), rejoin.rounds, sent_before, sent_after);
  CHECK(sent_before >= 0);
  CHECK(sent_after > sent_before);
  CHECK_FALSE(warned("NCCL_ROCE_RECOVERY_TIMEOUT_S"));
}

// Member `down_member` of the receiver's virtual NIC (names[2], names[3]; the sender's names[0],
// names[1]) DOWN under a stream: the sender's QPs on that member fail, the epoch keeps the members
// both ends have up, and the stream finishes over the other with every byte right. With
// `comes_back`, the port is ACTIVE again and the member rejoins at the receiver's request (the
// sender's own ports never went down); then the traffic plan on the same comms.
void receiver_member_down(const std::array<const char*, 4>& names, size_t down_member,
                          uint64_t seed, bool comes_back) {
  small_retry_budget();
  use_test_devices({names[0], names[1], names[2], names[3]});
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const FusedNics nics = make_fused_nics(plugin, names[0], names[1], names[2], names[3]);
  const auto pairs = open_pairs(plugin, nics.left, nics.right, 1);
  const CommPair& pair = pairs[0];
  StreamArenas arenas(plugin, pair);
  const char* const kDown = names[2 + down_member];
  const std::string down = test_device_name(kDown);

  reset_warn_count();
  const std::string before = vroce_stats();
  {
    Stream stream(plugin, arenas, seed, 1500);
    wait_for_payload(before, 1 << 20);
    REQUIRE(inject_port_event(kDown, IBV_EVENT_PORT_ERR) >= 1);
    stream.join();
    INFO("sender: " << stream.sent.error << "; receiver: " << stream.received.error);
    CHECK(stream.sent.ok);
    CHECK(stream.received.ok);  // every size, byte and canary checked
    CHECK(stream.received.bytes == stream.sent.bytes);
    if (!stream.ok()) {
      print_warns("the stream failed");
      release_and_close(plugin, arenas, pair);
      return;
    }
  }
  const std::string failed_over = vroce_stats();
  int recovered_warns = 0;
  for (const auto& line : warn_lines()) {
    recovered_warns += line.find("recovered") != std::string::npos ? 1 : 0;
  }
  std::printf(
      "RECOVERY vnic-receiver down=%s ack_timeouts=%lld lost=%lld retransmitted=%lld "
      "recovered_warns=%d\n",
      down.c_str(), static_cast<long long>(grown(before, failed_over, "ack_timeouts")),
      static_cast<long long>(grown(before, failed_over, "drops.link_down")),
      static_cast<long long>(grown(before, failed_over, "retransmitted_packets")), recovered_warns);
  CHECK(grown(before, failed_over, "drops.link_down") > 0);  // the outage was real
  CHECK(warned("dev " + down + " port 1", "IBV_EVENT_PORT_ERR"));
  CHECK(warned("recovered", "epoch"));
  // The receiver's WARN names its member left out.
  CHECK(any_line_contains(warn_lines(), {"recovered", "left out", down}));
  CHECK_FALSE(warned("NCCL_ROCE_RECOVERY_TIMEOUT_S"));
  // The sender's ports were up all along: it tries no rejoin that the receiver would refuse.
  CHECK_FALSE(warned("the member rejoins"));

  if (comes_back) {
    // ACTIVE again: the receiver asks for the member back and the sender takes it.
    reset_warn_count();
    REQUIRE(inject_port_event(kDown, IBV_EVENT_PORT_ACTIVE) >= 1);
    const Rejoin rejoin = stream_until_rejoin(plugin, arenas, seed + 100);
    std::printf("RECOVERY vnic-receiver-back rounds=%d\n", rejoin.rounds);
    CHECK(rejoin.streams_ok);
    CHECK(rejoin.logged);
    CHECK(any_line_contains(warn_lines(), {"recovered", "all members",
                                           "the receiver's member(s) " +
                                               std::to_string(down_member) + " ACTIVE again"}));
  }
  // The traffic plan (multi-receives) on the same comms, which closes them.
  plan_and_close(plugin, arenas, pair, seed + 2, 300);
}

}  // namespace

TEST_CASE(
    "one port per side: the sender's port down past the retry budget, then ACTIVE again: the "
    "connection recovers (a new epoch) and both sides finish with every byte right",
    "[hardening][recovery][vroce][quick]") {
  one_port_recovery("rpa", "rpb", "rpa", 201);
}

TEST_CASE(
    "one port per side: the receiver's port down past the retry budget, then ACTIVE again: the "
    "connection recovers (a new epoch) and both sides finish with every byte right",
    "[hardening][recovery][vroce][quick]") {
  one_port_recovery("rpc", "rpd", "rpd", 203);
}

TEST_CASE(
    "the sender's port stays down past NCCL_ROCE_RECOVERY_TIMEOUT_S: the connection fails naming "
    "the setting, closes succeed, and a connection made once it is back works",
    "[hardening][recovery][vroce][quick]") {
  recovery_bound("rpe", "rpf", "rpe", 205);
}

TEST_CASE(
    "the receiver's port stays down past NCCL_ROCE_RECOVERY_TIMEOUT_S: the connection fails "
    "naming the setting, closes succeed, and a connection made once it is back works",
    "[hardening][recovery][vroce][quick]") {
  recovery_bound("rpg", "rph", "rph", 207);
}

TEST_CASE(
    "a path that loses every packet while the ports stay ACTIVE: the recovery epochs make no "
    "progress and the plugin fails the connection itself, closes succeed",
    "[hardening][recovery][vroce][quick]") {
  small_retry_budget();
  use_test_devices({"rxa", "rxb"});
  // Everything sent on the fabric is lost (the handshake and the epochs' frames go over TCP):
  // each epoch's new QPs fail as the old ones did, and no port wait can end it.
  ScopedEnv blackhole("VROCE_FAULTS", "drop=1");
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const auto pairs =
      open_pairs(plugin, require_device(plugin, "rxa"), require_device(plugin, "rxb"), 1);
  reset_warn_count();
  const auto start = Clock::now();
  {
    Traffic traffic(plugin, pairs[0], 221, flap_shape(100));
    traffic.join();  // bounded: the traffic helpers' watchdog, if the plugin never gives up
    INFO("sender: " << traffic.run.sent.error << "; receiver: " << traffic.run.received.error);
    CHECK_FALSE((traffic.run.sent.ok && traffic.run.received.ok));
    // The plugin's error, not the helpers' watchdog ("timed out ...", ncclSuccess).
    CHECK((traffic.run.sent.result != ncclSuccess || traffic.run.received.result != ncclSuccess));
    CHECK(traffic.run.sent.close_result == ncclSuccess);
    CHECK(traffic.run.received.close_result == ncclSuccess);
  }
  int epochs = 0;
  for (const auto& line : warn_lines()) {
    epochs += line.find("recovered") != std::string::npos ? 1 : 0;
  }
  std::printf("RECOVERY blackhole elapsed_ms=%.1f recovered_warns=%d\n",
              std::chrono::duration<double, std::milli>(Clock::now() - start).count(), epochs);
  CHECK(warned("IBV_WC_RETRY_EXC_ERR", "recovery epoch"));  // the failure says epochs were tried
  CHECK_FALSE(warned("NCCL_ROCE_RECOVERY_TIMEOUT_S"));      // no port was down to wait for
}

TEST_CASE(
    "a virtual NIC whose member's port goes down carries on over the other member with every "
    "byte right, and takes the member back once its port is ACTIVE again",
    "[hardening][recovery][vroce][vnic][quick]") {
  small_retry_budget();
  SysfsRoot sysfs;
  use_test_devices({"rva", "rvb", "rvc", "rvd"});
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  int left = -1;
  int right = -1;
  REQUIRE(plugin.make_vdevice(&left, {require_device(plugin, "rva"),
                                      require_device(plugin, "rvb")}) == ncclSuccess);
  REQUIRE(plugin.make_vdevice(&right, {require_device(plugin, "rvc"),
                                       require_device(plugin, "rvd")}) == ncclSuccess);
  Properties props;
  REQUIRE(plugin.properties(left, &props) == ncclSuccess);
  REQUIRE(props.vdev_count == 2);
  const auto pairs = open_pairs(plugin, left, right, 1);
  const CommPair& pair = pairs[0];
  StreamArenas arenas(plugin, pair);
  const std::string rvb = test_device_name("rvb");

  // 1. Failover: rvb goes DOWN under a stream and stays down; the stream completes on rva.
  reset_warn_count();
  const std::string before = vroce_stats();
  {
    Stream stream(plugin, arenas, 211, 1500);
    wait_for_payload(before, 1 << 20);
    REQUIRE(inject_port_event("rvb", IBV_EVENT_PORT_ERR) >= 1);
    stream.join();
    INFO("sender: " << stream.sent.error << "; receiver: " << stream.received.error);
    CHECK(stream.sent.ok);
    CHECK(stream.received.ok);  // every size, byte and canary checked
    CHECK(stream.received.bytes == stream.sent.bytes);
    if (!stream.ok()) {
      print_warns("the stream failed");
      release_and_close(plugin, arenas, pair);
      return;
    }
  }
  const std::string failed_over = vroce_stats();
  std::printf("RECOVERY vnic failover ack_timeouts=%lld lost=%lld retransmitted=%lld\n",
              static_cast<long long>(grown(before, failed_over, "ack_timeouts")),
              static_cast<long long>(grown(before, failed_over, "drops.link_down")),
              static_cast<long long>(grown(before, failed_over, "retransmitted_packets")));
  CHECK(grown(before, failed_over, "drops.link_down") > 0);  // the outage was real
  CHECK(warned("dev " + rvb + " port 1", "IBV_EVENT_PORT_ERR"));
  CHECK(warned("recovered", "epoch"));
  CHECK(any_line_contains(warn_lines(), {"recovered", "epoch", rvb}));  // it names the member

  // What rvb has sent so far, its QPs failed and its port still down. (Let vroce publish it
  // first; a value published late could only be lower, never hide a rejoin.)
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long long rvb_sent_before = sysfs.port_counter(rvb, "port_xmit_packets");

  // 2. Rejoin: rvb ACTIVE again; the sender takes it back at its next call. Streams on the same
  // comms until the rejoin is logged (at the hang bound at most), one more after it.
  reset_warn_count();
  REQUIRE(inject_port_event("rvb", IBV_EVENT_PORT_ACTIVE) >= 1);
  const auto give_up = Clock::now() + kHangBound;
  int rounds = 0;
  bool streams_ok = true;
  bool after_rejoin = false;
  while (streams_ok && !after_rejoin && Clock::now() < give_up) {
    const bool rejoined = warned("rejoin");
    Stream stream(plugin, arenas, 300 + static_cast<uint64_t>(static_cast<unsigned>(rounds)), 64);
    stream.join();
    ++rounds;
    INFO("round " << rounds << ": sender: " << stream.sent.error
                  << "; receiver: " << stream.received.error);
    CHECK(stream.sent.ok);
    CHECK(stream.received.ok);
    streams_ok = stream.ok();
    after_rejoin = rejoined;
  }
  CHECK(warned("dev " + rvb + " port 1", "IBV_EVENT_PORT_ACTIVE"));
  const bool rejoin_logged = warned("rejoin");
  CHECK(rejoin_logged);
  CHECK(any_line_contains(warn_lines(), {"rejoin", rvb}));  // it names the member
  if (!streams_ok) {
    release_and_close(plugin, arenas, pair);
    return;
  }

  // 3. The whole traffic plan (multi-receives, tags, flushes, the tail in flight at close) on the
  // same comms, which it closes.
  CHECK(arenas.release() == ncclSuccess);
  {
    Traffic traffic(plugin, pair, 213, flap_shape(300));
    traffic.join();
    INFO("sender: " << traffic.run.sent.error << "; receiver: " << traffic.run.received.error);
    CHECK(traffic.run.sent.ok);
    CHECK(traffic.run.received.ok);
  }

  // rvb carries traffic again (vroce publishes its counters within 100 ms of a change; the wait
  // is bounded, and skipped when no rejoin was logged: nothing would move the counter).
  long long rvb_sent_after = sysfs.port_counter(rvb, "port_xmit_packets");
  const auto counted_by = Clock::now() + kHangBound;
  while (rejoin_logged && rvb_sent_before >= 0 && rvb_sent_after <= rvb_sent_before &&
         Clock::now() < counted_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rvb_sent_after = sysfs.port_counter(rvb, "port_xmit_packets");
  }
  std::printf("RECOVERY vnic rejoin rounds=%d rvb_xmit_packets_before=%lld after=%lld\n", rounds,
              rvb_sent_before, rvb_sent_after);
  CHECK(rvb_sent_before >= 0);
  CHECK(rvb_sent_after > rvb_sent_before);
  CHECK_FALSE(warned("NCCL_ROCE_RECOVERY_TIMEOUT_S"));
}

TEST_CASE(
    "virtual NIC, split messages: with two QPs per member, a sender member's port goes down under "
    "a stream and a multi-receive plan, both finish over the other member with every byte right, "
    "and the member rejoins once its port is ACTIVE again",
    "[hardening][recovery][vroce][vnic][quick]") {
  small_retry_budget();
  // Read by the plugin's init: each member gets two QPs and each message is split over the two of
  // the member whose turn it is.
  ScopedEnv qps("NCCL_IB_QPS_PER_CONNECTION", "2");
  ScopedEnv split("NCCL_IB_SPLIT_DATA_ON_QPS", "1");
  SysfsRoot sysfs;
  use_test_devices({"rsa", "rsb", "rsc", "rsd"});
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const FusedNics nics = make_fused_nics(plugin, "rsa", "rsb", "rsc", "rsd");
  // Pair 0 streams messages of up to 256 KiB and stays open for the rejoin; pair 1 runs the
  // traffic plan (multi-receives, tags, flushes) at the same time and closes.
  const auto pairs = open_pairs(plugin, nics.left, nics.right, 2);
  StreamArenas arenas(plugin, pairs[0]);
  const char* const kDown = "rsb";
  const std::string down = test_device_name(kDown);

  // 1. Failover: rsb goes DOWN under both and stays down.
  reset_warn_count();
  const std::string before = vroce_stats();
  uint64_t stream_bytes = 0;
  uint64_t plan_bytes = 0;
  {
    Stream stream(plugin, arenas, 231, 1500);
    Traffic plan(plugin, pairs[1], 233, flap_shape(1500));
    wait_for_payload(before, 1 << 20);
    REQUIRE(inject_port_event(kDown, IBV_EVENT_PORT_ERR) >= 1);
    stream.join();
    plan.join();
    INFO("stream: sender: " << stream.sent.error << "; receiver: " << stream.received.error);
    INFO("plan: sender: " << plan.run.sent.error << "; receiver: " << plan.run.received.error);
    CHECK(stream.sent.ok);
    CHECK(stream.received.ok);  // every size, byte and canary checked
    CHECK(stream.received.bytes == stream.sent.bytes);
    CHECK(plan.run.sent.ok);
    CHECK(plan.run.received.ok);  // every size and byte of every entry checked
    CHECK(plan.run.received.bytes > 0);
    CHECK(plan.run.sent.close_result == ncclSuccess);
    CHECK(plan.run.received.close_result == ncclSuccess);
    stream_bytes = stream.received.bytes;
    plan_bytes = plan.run.received.bytes;
    if (!stream.ok()) {
      print_warns("the stream failed");
      release_and_close(plugin, arenas, pairs[0]);
      return;
    }
  }
  const std::string failed_over = vroce_stats();
  std::printf(
      "RECOVERY vnic-split failover down=%s ack_timeouts=%lld lost=%lld retransmitted=%lld "
      "stream_bytes=%llu plan_bytes=%llu\n",
      down.c_str(), static_cast<long long>(grown(before, failed_over, "ack_timeouts")),
      static_cast<long long>(grown(before, failed_over, "drops.link_down")),
      static_cast<long long>(grown(before, failed_over, "retransmitted_packets")),
      static_cast<unsigned long long>(stream_bytes), static_cast<unsigned long long>(plan_bytes));
  CHECK(grown(before, failed_over, "drops.link_down") > 0);  // the outage was real
  CHECK(warned("dev " + down + " port 1", "IBV_EVENT_PORT_ERR"));
  CHECK(warned("recovered", "epoch"));
  CHECK(any_line_contains(warn_lines(), {"recovered", "epoch", down}));  // it names the member
  CHECK_FALSE(warned("NCCL_ROCE_RECOVERY_TIMEOUT_S"));

  // 2. Rejoin: rsb ACTIVE again; streams on pair 0 until the rejoin is logged, one more after it,
  // then the traffic plan on the same comms, which closes them.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let vroce publish the counter
  const long long sent_before = sysfs.port_counter(down, "port_xmit_packets");
  reset_warn_count();
  REQUIRE(inject_port_event(kDown, IBV_EVENT_PORT_ACTIVE) >= 1);
  const Rejoin rejoin = stream_until_rejoin(plugin, arenas, 330);
  CHECK(warned("dev " + down + " port 1", "IBV_EVENT_PORT_ACTIVE"));
  CHECK(rejoin.logged);
  CHECK(any_line_contains(warn_lines(), {"rejoin", down}));
  if (!rejoin.streams_ok) {
    release_and_close(plugin, arenas, pairs[0]);
    return;
  }
  plan_and_close(plugin, arenas, pairs[0], 237, 300);
  const long long sent_after = xmit_packets_above(sysfs, down, sent_before, rejoin.logged);
  std::printf("RECOVERY vnic-split rejoin rounds=%d %s_xmit_packets_before=%lld after=%lld\n",
              rejoin.rounds, down.c_str(), sent_before, sent_after);
  CHECK(sent_before >= 0);
  CHECK(sent_after > sent_before);  // rsb carries traffic again
  CHECK_FALSE(warned("NCCL_ROCE_RECOVERY_TIMEOUT_S"));
}

TEST_CASE(
    "virtual NIC, both sender members down: the connection waits past the retry budget, member 0 "
    "comes back and the stream finishes over it with every byte right, and member 1 rejoins once "
    "its port is ACTIVE again",
    "[hardening][recovery][vroce][vnic][quick]") {
  sender_members_all_down({"rwa", "rwb", "rwc", "rwd"}, 0, 241);
}

TEST_CASE(
    "virtual NIC, both sender members down: the connection waits past the retry budget, member 1 "
    "comes back and the stream finishes over it with every byte right, and member 0 rejoins once "
    "its port is ACTIVE again",
    "[hardening][recovery][vroce][vnic][quick]") {
  sender_members_all_down({"rwe", "rwf", "rwg", "rwh"}, 1, 245);
}

TEST_CASE(
    "virtual NIC, a receiver member down: member 1 of the receiver's NIC goes down under a stream, "
    "the connection carries on over member 0, and the member rejoins when the receiver asks",
    "[hardening][recovery][vroce][vnic][quick]") {
  receiver_member_down({"rra", "rrb", "rrc", "rrd"}, 1, 251, true);
}

TEST_CASE(
    "virtual NIC, a receiver member down: member 0 of the receiver's NIC goes down under a stream "
    "and stays down, and the connection carries on over member 1 with every byte right",
    "[hardening][recovery][vroce][vnic][quick]") {
  receiver_member_down({"rre", "rrf", "rrg", "rrh"}, 0, 255, false);
}

TEST_CASE(
    "VROCE_PORT_EVENTS: a port taken down and back on a schedule, as NCCL's own processes get it: "
    "the events arrive in order, and a stream they cross recovers with every byte right",
    "[hardening][recovery][vroce][quick]") {
  small_retry_budget();
  // 0.5 s after vroce's devices come up (the plugin's init) the sender's port goes down, 1.5 s
  // later it is back: the stream below is under way then on any machine this suite runs on, and
  // whether it was is checked, not assumed.
  ScopedEnv schedule("VROCE_PORT_EVENTS", "rsea:down@500,rsea:up@2000");
  use_test_devices({"rsea", "rseb"});
  PluginDriver plugin(plugin_path_from_env(), Api::V11);
  REQUIRE(plugin.init() == ncclSuccess);
  const auto pairs =
      open_pairs(plugin, require_device(plugin, "rsea"), require_device(plugin, "rseb"), 1);
  reset_warn_count();
  const std::string before = vroce_stats();
  bool crossed = false;
  {
    Traffic traffic(plugin, pairs[0], 231, flap_shape(20000));
    const auto give_up = Clock::now() + kHangBound;
    while (!warned("dev rsea port 1", "IBV_EVENT_PORT_ERR") && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    crossed = !traffic.finished();
    traffic.join();
    INFO("sender: " << traffic.run.sent.error << "; receiver: " << traffic.run.received.error);
    CHECK(traffic.run.sent.ok);
    CHECK(traffic.run.received.ok);
  }
  const auto give_up = Clock::now() + kHangBound;
  while (!warned("dev rsea port 1", "IBV_EVENT_PORT_ACTIVE") && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::string after = vroce_stats();
  std::printf("RECOVERY scheduled crossed=%d lost=%lld ack_timeouts=%lld\n", crossed ? 1 : 0,
              static_cast<long long>(grown(before, after, "drops.link_down")),
              static_cast<long long>(grown(before, after, "ack_timeouts")));
  CHECK(warned("dev rsea port 1", "IBV_EVENT_PORT_ERR"));
  CHECK(warned("dev rsea port 1", "IBV_EVENT_PORT_ACTIVE"));
  if (crossed) {
    CHECK(grown(before, after, "drops.link_down") > 0);
    CHECK(warned("recovered", "epoch"));
  }
}
