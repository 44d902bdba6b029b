// One side of a two-process (or two-namespace) plugin run, driven by the fabric tests:
//
//   fabric_peer recv --device NAME [options]   listens, prints "HANDLE <hex>", accepts, receives
//   fabric_peer send --device NAME --handle HEX [options]   connects and sends
//
// Options: --api v8|v9|v10|v11 (default v8), --seed N, --groups N, --window N, --max-recvs N,
// --max-single BYTES, --tc N (communicator traffic class: v10 connect / v11 init),
// --expect-error (send: succeed only if a test() fails, printing how long it took),
// --wait-before-close (recv: read one line from stdin before closing, so the sender can
// finish posting its in-flight tail first), --post-and-hang (recv: post one window of receives,
// print POSTED and block on stdin without polling: a peer about to be killed), --wait-go (send:
// read one line from stdin after connecting, before the first send), --wait-start (send: read one
// line from stdin before connecting), --enter-netns PATH (after init, before listen or connect:
// move this thread into the network namespace at PATH, as a pod's process that shares the host's
// RDMA device runs in another namespace than the device's netdev).
// Prints "OK bytes=N flushes=N" or "FAIL <reason>" and exits 0 or 1. The environment
// (VROCE_DEVICES, NCCL_IBVERBS_LIB, NCCL_*) comes from the caller.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "hang_bound.h"
#include "plugin_driver.h"
#include "traffic.h"

using namespace roce::test;

namespace {

struct Options {
  std::string role;
  std::string device;
  std::string handle_hex;
  Api api = Api::V8;
  uint64_t seed = 1;
  PlanShape shape;
  int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
  bool expect_error = false;
  bool wait_before_close = false;
  bool post_and_hang = false;
  bool wait_go = false;
  bool wait_start = false;
  std::string enter_netns;
};

int fail(const std::string& why) {
  std::printf("FAIL %s\n", why.c_str());
  std::fflush(stdout);
  return 1;
}

bool parse(int argc, char** argv, Options* o, std::string* error) {
  if (argc < 2) {
    *error = "usage: fabric_peer recv|send --device NAME [--handle HEX] [options]";
    return false;
  }
  o->role = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        throw std::runtime_error(arg + " needs a value");
      }
      return argv[++i];
    };
    if (arg == "--device") {
      o->device = value();
    } else if (arg == "--handle") {
      o->handle_hex = value();
    } else if (arg == "--api") {
      o->api = parse_api(value());
    } else if (arg == "--seed") {
      o->seed = std::stoull(value());
    } else if (arg == "--groups") {
      o->shape.groups = std::stoi(value());
    } else if (arg == "--window") {
      o->shape.window = std::stoi(value());
    } else if (arg == "--max-recvs") {
      o->shape.max_recvs = std::stoi(value());
    } else if (arg == "--max-single") {
      o->shape.max_single = std::stoull(value());
    } else if (arg == "--tc") {
      o->traffic_class = std::stoi(value());
    } else if (arg == "--expect-error") {
      o->expect_error = true;
    } else if (arg == "--wait-before-close") {
      o->wait_before_close = true;
    } else if (arg == "--post-and-hang") {
      o->post_and_hang = true;
    } else if (arg == "--wait-go") {
      o->wait_go = true;
    } else if (arg == "--wait-start") {
      o->wait_start = true;
    } else if (arg == "--enter-netns") {
      o->enter_netns = value();
    } else {
      *error = "unknown option " + arg;
      return false;
    }
  }
  if ((o->role != "recv" && o->role != "send") || o->device.empty() ||
      (o->role == "send" && o->handle_hex.empty())) {
    *error = "need recv|send, --device, and --handle for send";
    return false;
  }
  return true;
}

// Posts one window of receives (so the sender holds that many clear-to-send slots), says so,
// and blocks without polling: the parent kills this process next.
int post_and_hang(PluginDriver& plugin, void* recv_comm, const Options& o) {
  const auto plan = make_plan(o.seed, o.shape);
  static std::vector<uint8_t> arena;
  arena.assign(arena_bytes(o.shape) + size_t(o.shape.window) * 8 * 4096, 0);
  void* mh = nullptr;
  if (ncclResult_t r = plugin.reg_mr(recv_comm, arena.data(), arena.size(), NCCL_PTR_HOST, &mh);
      r != ncclSuccess) {
    return fail("regMr returned " + std::to_string(r));
  }
  size_t offset = 0;
  for (int g = 0; g < o.shape.window && g < static_cast<int>(plan.size()); ++g) {
    const auto& group = plan[static_cast<size_t>(g)];
    std::array<void*, 8> ptrs{};
    std::array<size_t, 8> sizes{};
    std::array<int, 8> tags{};
    std::array<void*, 8> mhs{};
    const int n = static_cast<int>(group.entries.size());
    for (int i = 0; i < n; ++i) {
      const auto& m = group.entries[static_cast<size_t>(i)];
      ptrs[static_cast<size_t>(i)] = arena.data() + offset;
      sizes[static_cast<size_t>(i)] = m.recv_size;
      tags[static_cast<size_t>(i)] = m.tag;
      mhs[static_cast<size_t>(i)] = mh;
      offset += (m.recv_size + 4095) / 4096 * 4096;
      if (offset > arena.size()) {
        return fail("arena too small for the posted window");
      }
    }
    void* request = nullptr;
    if (ncclResult_t r = plugin.irecv(recv_comm, n, ptrs.data(), sizes.data(), tags.data(),
                                      mhs.data(), &request);
        r != ncclSuccess || request == nullptr) {
      return fail("irecv returned " + std::to_string(r));
    }
  }
  std::printf("POSTED\n");
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
  return 0;
}

int run(const Options& o) {
  PluginDriver plugin(plugin_path_from_env(), o.api);
  if (ncclResult_t r = plugin.init(o.traffic_class); r != ncclSuccess) {
    return fail("init returned " + std::to_string(r));
  }
  const int dev = plugin.find_device(o.device);
  if (dev < 0) {
    return fail("device " + o.device + " not found");
  }
  if (!o.enter_netns.empty()) {
    const int fd = ::open(o.enter_netns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
      return fail("cannot enter " + o.enter_netns + ": " + std::strerror(errno));
    }
    ::close(fd);
  }
  TrafficOptions traffic;
  if (o.role == "recv") {
    Handle handle;
    void* listen_comm = nullptr;
    if (ncclResult_t r = plugin.listen(dev, &handle, &listen_comm); r != ncclSuccess) {
      return fail("listen returned " + std::to_string(r));
    }
    std::printf("HANDLE %s\n", handle_to_hex(handle).c_str());
    std::fflush(stdout);
    void* recv_comm = nullptr;
    if (ncclResult_t r = accept_until_ready(plugin, listen_comm, &recv_comm, kHangBoundMs);
        r != ncclSuccess) {
      return fail("accept returned " + std::to_string(r));
    }
    plugin.close_listen(listen_comm);
    std::printf("CONNECTED\n");
    std::fflush(stdout);
    if (o.post_and_hang) {
      return post_and_hang(plugin, recv_comm, o);
    }
    if (o.wait_before_close) {
      traffic.before_close = [] {
        std::printf("READY_TO_CLOSE\n");
        std::fflush(stdout);
        std::string line;
        std::getline(std::cin, line);
      };
    }
    auto result = run_receiver(plugin, recv_comm, o.seed, o.shape, traffic);
    if (!result.ok) {
      return fail(result.error);
    }
    std::printf("OK bytes=%llu flushes=%d\n", static_cast<unsigned long long>(result.bytes),
                result.flushes);
    std::fflush(stdout);
    return 0;
  }

  Handle handle;
  if (!handle_from_hex(o.handle_hex, &handle)) {
    return fail("--handle is not 256 hex digits");
  }
  if (o.wait_start) {
    std::printf("WAITING\n");
    std::fflush(stdout);
    std::string line;
    std::getline(std::cin, line);
  }
  void* send_comm = nullptr;
  if (ncclResult_t r = connect_until_ready(plugin, dev, &handle, &send_comm, kHangBoundMs);
      r != ncclSuccess) {
    return fail("connect returned " + std::to_string(r));
  }
  std::printf("CONNECTED\n");
  std::fflush(stdout);
  if (o.wait_go) {
    std::string line;
    std::getline(std::cin, line);
  }
  const auto start = std::chrono::steady_clock::now();
  auto result = run_sender(plugin, send_comm, o.seed, o.shape, traffic);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (o.expect_error) {
    if (result.ok || result.result == ncclSuccess) {
      return fail("expected a plugin error, got " +
                  (result.ok ? std::string("success") : result.error));
    }
    std::printf("ERROR result=%d after_ms=%lld: %s\n", static_cast<int>(result.result),
                static_cast<long long>(ms), result.error.c_str());
    std::fflush(stdout);
    // The comm has failed; deregistering and closing it must still succeed.
    if (result.close_result != ncclSuccess) {
      return fail("deregMr/closeSend after the error returned " +
                  std::to_string(result.close_result));
    }
    return 0;
  }
  if (!result.ok) {
    return fail(result.error);
  }
  std::printf("OK bytes=%llu\n", static_cast<unsigned long long>(result.bytes));
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string error;
  try {
    if (!parse(argc, argv, &o, &error)) {
      return fail(error);
    }
    return run(o);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
