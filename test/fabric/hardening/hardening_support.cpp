// Hardening test support; see hardening_support.h.
#include "hardening_support.h"

#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "hang_bound.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// The sanitizer runtimes' count of the bytes their allocator has handed out and not taken back
// (clang ships it in <sanitizer/allocator_interface.h>; GCC, which builds the tsan preset, ships
// the runtime without that header).
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace roce::test {

int inject_port_event(const char* device, int event_type) {
  const char* lib = std::getenv("NCCL_IBVERBS_LIB");
  void* handle = dlopen(lib != nullptr ? lib : "libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) {
    throw std::runtime_error("vroce is not loaded (NCCL_IBVERBS_LIB)");
  }
  void* symbol = dlvsym(handle, "vroce_inject_port_event", "VROCE_PRIVATE_1.0");
  dlclose(handle);  // NOLOAD took a reference; the plugin keeps its own
  if (symbol == nullptr) {
    throw std::runtime_error("the loaded libibverbs.so.1 has no vroce_inject_port_event");
  }
  int (*fn)(const char*, int) = nullptr;
  std::memcpy(&fn, &symbol, sizeof(fn));
  return fn(device, event_type);
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string vroce_stats() {
  const char* lib = std::getenv("NCCL_IBVERBS_LIB");
  void* handle = dlopen(lib != nullptr ? lib : "libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) {
    throw std::runtime_error("vroce is not loaded (NCCL_IBVERBS_LIB)");
  }
  using StatsFn = int (*)(char*, size_t);
  auto fn = reinterpret_cast<StatsFn>(dlsym(handle, "vroce_stats_json"));
  dlclose(handle);  // NOLOAD took a reference; the plugin keeps its own
  if (fn == nullptr) {
    throw std::runtime_error("the loaded libibverbs.so.1 is not vroce (no vroce_stats_json)");
  }
  std::string out(16384, '\0');
  int n = fn(out.data(), out.size());
  if (n >= static_cast<int>(out.size())) {
    out.assign(static_cast<size_t>(n) + 1, '\0');
    n = fn(out.data(), out.size());
  }
  out.resize(static_cast<size_t>(n));
  return out;
}

int64_t vroce_stat(const std::string& json, const std::string& path) {
  size_t from = 0;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = "\"" + path.substr(start, dot - start) + "\":";
    from = json.find(key, from);
    if (from == std::string::npos) {
      throw std::runtime_error("vroce counter " + path + " not found in " + json);
    }
    from += key.size();
    if (dot == std::string::npos) {
      break;
    }
    start = dot + 1;
  }
  return std::strtoll(json.c_str() + from, nullptr, 10);
}

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string word;
  while (status >> word) {
    if (word == "VmRSS:") {
      long kib = 0;
      status >> kib;
      return kib;
    }
  }
  return -1;
}

long memory_in_use_kib() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return static_cast<long>(__sanitizer_get_current_allocated_bytes() / 1024);
#else
  return rss_kib();
#endif
}

double retry_budget_ms(int ib_timeout, int retry_cnt, double time_scale) {
  const double timeout_us = std::max(1.0, 4.096 * std::ldexp(1.0, ib_timeout) * time_scale);
  return timeout_us * (retry_cnt + 1) / 1000.0;
}

int require_device(PluginDriver& plugin, const char* name) {
  const int index = plugin.find_device(name);
  INFO("device " << name);
  REQUIRE(index >= 0);
  return index;
}

Handle handle_printed_by(ChildProcess& peer) {
  const auto line = peer.wait_for("HANDLE ", kHangBoundMs);
  INFO("peer:\n" << peer.output());
  REQUIRE(line);
  Handle handle;
  REQUIRE(handle_from_hex(line->substr(7), &handle));
  return handle;
}

FirstSend register_first_send(PluginDriver& plugin, void* send_comm, uint64_t seed, int groups) {
  PlanShape shape;
  shape.groups = groups;
  shape.max_recvs = 1;
  FirstSend first;
  first.message = make_plan(seed, shape)[0].entries[0];
  first.buffer.assign(std::max<size_t>(first.message.send_size, 1), 0x5c);
  REQUIRE(plugin.reg_mr(send_comm, first.buffer.data(), first.buffer.size(), NCCL_PTR_HOST,
                        &first.mh) == ncclSuccess);
  return first;
}

ncclResult_t test_until_settled(PluginDriver& plugin, void* request, int* done) {
  const auto deadline = std::chrono::steady_clock::now() + kHangBound;
  ncclResult_t result = ncclSuccess;
  *done = 0;
  while (result == ncclSuccess && *done == 0 && std::chrono::steady_clock::now() < deadline) {
    int size = 0;
    result = plugin.test(request, done, &size);
  }
  return result;
}

std::vector<CommPair> open_pairs(PluginDriver& plugin, int from, int to, int count) {
  std::vector<CommPair> pairs(static_cast<size_t>(count));
  for (auto& pair : pairs) {
    Handle handle;
    void* listen_comm = nullptr;
    REQUIRE(plugin.listen(to, &handle, &listen_comm) == ncclSuccess);
    ncclResult_t accepted = ncclInternalError;
    std::thread acceptor(
        [&] { accepted = accept_until_ready(plugin, listen_comm, &pair.recv, kHangBoundMs); });
    const ncclResult_t connected =
        connect_until_ready(plugin, from, &handle, &pair.send, kHangBoundMs);
    acceptor.join();
    REQUIRE(connected == ncclSuccess);
    REQUIRE(accepted == ncclSuccess);
    REQUIRE(plugin.close_listen(listen_comm) == ncclSuccess);
  }
  return pairs;
}

std::vector<PairRun> run_pairs(PluginDriver& plugin, const std::vector<CommPair>& pairs,
                               uint64_t seed_base, const PlanShape& shape,
                               const TrafficOptions& options) {
  std::vector<PairRun> runs(pairs.size());
  std::vector<std::thread> threads;
  // The teardown NCCL's ranks do: the receiver closes only once the sender is done (a barrier).
  // Without it, a lossy link can lose the last ACK or a tail clear-to-send after the other side
  // destroyed its QPs, and the survivor's retries then fail with RETRY_EXC, correctly.
  // And a side that fails stops its peer at once, as NCCL's ranks abort together, instead of
  // leaving it to wait for its watchdog.
  struct PairFlags {
    std::atomic<bool> sender_closing{false};
    std::atomic<bool> sender_failed{false};
    std::atomic<bool> receiver_failed{false};
  };
  std::unique_ptr<PairFlags[]> flags(new PairFlags[pairs.size()]);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const uint64_t seed = seed_base + i;
    threads.emplace_back([&, i, seed] {
      TrafficOptions mine = options;
      mine.failed = &flags[i].sender_failed;
      mine.peer_failed = &flags[i].receiver_failed;
      mine.before_close = [&, i] {
        if (options.before_close) {
          options.before_close();
        }
        flags[i].sender_closing = true;
      };
      runs[i].sent = run_sender(plugin, pairs[i].send, seed, shape, mine);
    });
    threads.emplace_back([&, i, seed] {
      TrafficOptions mine = options;
      mine.failed = &flags[i].receiver_failed;
      mine.peer_failed = &flags[i].sender_failed;
      mine.before_close = [&, i] {
        if (options.before_close) {
          options.before_close();
        }
        const auto deadline = std::chrono::steady_clock::now() + options.deadline;
        while (!flags[i].sender_closing && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      };
      runs[i].received = run_receiver(plugin, pairs[i].recv, seed, shape, mine);
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  return runs;
}

void nap() {
  std::this_thread::sleep_for(std::chrono::microseconds(50));
}

bool warned(const std::string& a, const std::string& b) {
  for (const auto& line : warn_lines()) {
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TrafficOptions napping() {
  TrafficOptions options;
  options.idle = nap;
  return options;
}

}  // namespace roce::test
