// One side of a two-process (or two-namespace) plugin run, driven by the fabric tests:
//
//   fabric_peer recv --device NAME [options]   listens, prints "HANDLE <hex>", accepts, receives
//   fabric_peer send --device NAME --handle HEX [options]   connects and sends
//
// Options: --api v8|v9|v10|v11 (default v8), --seed N, --groups N, --window N, --max-recvs N,
// --max-single BYTES, --tc N (communicator traffic class: v10 connect / v11 init),
// --expect-error (send: succeed only if a test() fails, printing how long it took),
// --wait-before-close (recv: read one line from stdin before closing, so the sender can
// finish posting its in-flight tail first).
// Prints "OK bytes=N flushes=N" or "FAIL <reason>" and exits 0 or 1. The environment
// (VROCE_DEVICES, NCCL_IBVERBS_LIB, NCCL_*) comes from the caller.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

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
    if (arg == "--device")
      o->device = value();
    else if (arg == "--handle")
      o->handle_hex = value();
    else if (arg == "--api")
      o->api = parse_api(value());
    else if (arg == "--seed")
      o->seed = std::stoull(value());
    else if (arg == "--groups")
      o->shape.groups = std::stoi(value());
    else if (arg == "--window")
      o->shape.window = std::stoi(value());
    else if (arg == "--max-recvs")
      o->shape.max_recvs = std::stoi(value());
    else if (arg == "--max-single")
      o->shape.max_single = std::stoull(value());
    else if (arg == "--tc")
      o->traffic_class = std::stoi(value());
    else if (arg == "--expect-error")
      o->expect_error = true;
    else if (arg == "--wait-before-close")
      o->wait_before_close = true;
    else {
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

int run(const Options& o) {
  PluginDriver plugin(plugin_path_from_env(), o.api);
  if (ncclResult_t r = plugin.init(o.traffic_class); r != ncclSuccess) {
    return fail("init returned " + std::to_string(r));
  }
  const int dev = plugin.find_device(o.device);
  if (dev < 0) {
    return fail("device " + o.device + " not found");
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
    if (ncclResult_t r = accept_until_ready(plugin, listen_comm, &recv_comm, 60000);
        r != ncclSuccess) {
      return fail("accept returned " + std::to_string(r));
    }
    plugin.close_listen(listen_comm);
    std::printf("CONNECTED\n");
    std::fflush(stdout);
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
  void* send_comm = nullptr;
  if (ncclResult_t r = connect_until_ready(plugin, dev, &handle, &send_comm, 60000);
      r != ncclSuccess) {
    return fail("connect returned " + std::to_string(r));
  }
  std::printf("CONNECTED\n");
  std::fflush(stdout);
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
