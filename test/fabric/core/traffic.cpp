// Traffic plan, pattern and the two sides' loops; see traffic.h.
#include "traffic.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace roce::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint8_t kCanary = 0xa5;

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t message_key(uint64_t seed, int group, int entry) {
  return splitmix(seed ^ (static_cast<uint64_t>(group) << 20) ^ static_cast<uint64_t>(entry));
}

void fill_pattern(uint8_t* out, size_t size, uint64_t key) {
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    const uint64_t w = splitmix(key + i / 8);
    std::memcpy(out + i, &w, 8);
  }
  if (i < size) {
    const uint64_t w = splitmix(key + i / 8);
    std::memcpy(out + i, &w, size - i);
  }
}

// Offset of the first wrong byte, or -1.
long long find_mismatch(const uint8_t* data, size_t size, uint64_t key) {
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t w = splitmix(key + i / 8);
    const size_t len = std::min<size_t>(8, size - i);
    if (std::memcmp(data + i, &w, len) != 0) {
      for (size_t k = 0; k < len; ++k) {
        if (data[i + k] != reinterpret_cast<const uint8_t*>(&w)[k]) {
          return static_cast<long long>(i + k);
        }
      }
    }
  }
  return -1;
}

size_t entry_capacity(const PlanShape& shape, int n) {
  return n == 1 ? shape.max_single : shape.max_multi;
}

size_t slot_stride(const PlanShape& shape) {
  size_t multi = shape.max_multi * static_cast<size_t>(shape.max_recvs);
  size_t stride = std::max(shape.max_single, multi);
  return (stride + 4095) / 4096 * 4096;
}

uint8_t* entry_ptr(uint8_t* arena, const PlanShape& shape, int group, int entry, int n) {
  const size_t slot = static_cast<size_t>(group % shape.window);
  return arena + slot * slot_stride(shape) +
         (n == 1 ? 0 : static_cast<size_t>(entry) * shape.max_multi);
}

struct Arena {
  uint8_t* data = nullptr;
  size_t size = 0;
  explicit Arena(size_t bytes) : size(bytes) {
    data = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
    std::memset(data, 0, bytes);
  }
  ~Arena() { std::free(data); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
};

// Deregisters and closes at scope exit, whatever happened before.
class Closer {
 public:
  Closer(PluginDriver& plugin, void* comm, bool send, TrafficResult& out,
         const TrafficOptions& options)
      : plugin_(plugin), comm_(comm), send_(send), out_(out), options_(options) {}
  void set_mhandle(void* mh) { mh_ = mh; }
  ~Closer() {
    if (!out_.ok && options_.failed != nullptr) {
      options_.failed->store(true);
    }
    if (options_.before_close) {
      options_.before_close();
    }
    ncclResult_t r = ncclSuccess;
    if (mh_ != nullptr) {
      r = plugin_.dereg_mr(comm_, mh_);
    }
    ncclResult_t c = send_ ? plugin_.close_send(comm_) : plugin_.close_recv(comm_);
    out_.close_result = r != ncclSuccess ? r : c;
    if (out_.ok && out_.close_result != ncclSuccess) {
      out_.ok = false;
      out_.error = "deregMr/close returned " + std::to_string(out_.close_result);
    }
  }
  Closer(const Closer&) = delete;
  Closer& operator=(const Closer&) = delete;

 private:
  PluginDriver& plugin_;
  void* comm_;
  bool send_;
  void* mh_ = nullptr;
  TrafficResult& out_;
  const TrafficOptions& options_;
};

std::string fail_text(const char* what, ncclResult_t r) {
  return std::string(what) + " returned ncclResult_t " + std::to_string(static_cast<int>(r));
}

}  // namespace

std::vector<PlannedGroup> make_plan(uint64_t seed, const PlanShape& shape) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  std::vector<PlannedGroup> plan;
  const int total = shape.groups + shape.tail_in_flight + shape.unmatched_recvs;
  for (int g = 0; g < total; ++g) {
    PlannedGroup group;
    int n = 1;
    if (shape.max_recvs > 1 && uniform(0, 1) == 1) {
      n = static_cast<int>(uniform(2, static_cast<uint64_t>(shape.max_recvs)));
    }
    const size_t cap = entry_capacity(shape, n);
    // Distinct tags within a multi-receive, as NCCL uses them (one per sending rank), drawn
    // from a small range so groups reuse each other's tags.
    std::vector<int> tags = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    std::shuffle(tags.begin(), tags.end(), rng);
    for (int i = 0; i < n; ++i) {
      PlannedMessage m;
      m.tag = tags[static_cast<size_t>(i)];
      const uint64_t r = uniform(0, 99);
      if (r < 10) {
        m.send_size = 0;
      } else if (r < 50) {
        m.send_size = uniform(1, std::min<uint64_t>(4096, cap));
      } else if (r < 80) {
        m.send_size = uniform(1, std::min<uint64_t>(64 << 10, cap));
      } else {
        m.send_size = uniform(1, cap);
      }
      m.recv_size =
          uniform(0, 1) == 1 ? std::min<size_t>(cap, m.send_size + uniform(0, 4096)) : m.send_size;
      group.entries.push_back(m);
    }
    group.send_order.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      group.send_order[static_cast<size_t>(i)] = i;
    }
    std::shuffle(group.send_order.begin(), group.send_order.end(), rng);
    plan.push_back(std::move(group));
  }
  return plan;
}

size_t arena_bytes(const PlanShape& shape) {
  // The tail and the unmatched receives each take a slot of their own.
  if (shape.window < shape.tail_in_flight + shape.unmatched_recvs) {
    throw std::runtime_error("window must hold the tail and the unmatched receives");
  }
  return slot_stride(shape) * static_cast<size_t>(shape.window);
}

static void sender_body(TrafficResult& out, PluginDriver& plugin, void* send_comm, uint64_t seed,
                        const PlanShape& shape, const TrafficOptions& options) {
  const auto plan = make_plan(seed, shape);
  Arena arena(arena_bytes(shape));
  Closer closer(plugin, send_comm, true, out, options);
  void* mh = nullptr;
  if (ncclResult_t r = plugin.reg_mr(send_comm, arena.data, arena.size, options.mr_type, &mh);
      r != ncclSuccess) {
    out.error = fail_text("regMr", r);
    out.result = r;
    return;
  }
  closer.set_mhandle(mh);
  struct InFlight {
    void* request;
    int group;
    size_t size;
  };
  std::deque<InFlight> in_flight;
  const auto deadline = Clock::now() + options.deadline;

  // Tests the oldest send once; returns false on an error (out filled).
  auto poll_front = [&](bool* completed) {
    *completed = false;
    int done = 0;
    int size = -1;
    ncclResult_t r = plugin.test(in_flight.front().request, &done, &size);
    if (r != ncclSuccess) {
      out.error =
          fail_text("test (send)", r) + " at group " + std::to_string(in_flight.front().group);
      out.result = r;
      return false;
    }
    if (done) {
      if (static_cast<size_t>(size) != in_flight.front().size) {
        out.error = "send of group " + std::to_string(in_flight.front().group) + " reported " +
                    std::to_string(size) + " bytes, sent " + std::to_string(in_flight.front().size);
        return false;
      }
      out.bytes += in_flight.front().size;
      in_flight.pop_front();
      *completed = true;
    } else if (options.idle) {
      options.idle();
    }
    return true;
  };
  auto timed_out = [&](const std::string& what) {
    if (options.peer_failed != nullptr && options.peer_failed->load()) {
      out.error = "stopped " + what + ": the other side failed";
      return true;
    }
    if (Clock::now() > deadline) {
      out.error = "timed out " + what;
      return true;
    }
    return false;
  };

  const int sender_groups = shape.groups + shape.tail_in_flight;
  for (int g = 0; g < sender_groups; ++g) {
    const bool tail = g >= shape.groups;
    // A window slot is reused only once every send that used it has completed; before the
    // tail, everything completes so the tail's slots are free.
    const int reusable = tail ? shape.groups - 1 : g - shape.window;
    while (!in_flight.empty() && in_flight.front().group <= reusable) {
      bool completed = false;
      if (!poll_front(&completed) || timed_out("waiting for sends")) {
        return;
      }
    }
    const auto& group = plan[static_cast<size_t>(g)];
    const int n = static_cast<int>(group.entries.size());
    for (int i : group.send_order) {
      const auto& m = group.entries[static_cast<size_t>(i)];
      uint8_t* p = entry_ptr(arena.data, shape, g, i, n);
      fill_pattern(p, m.send_size, message_key(seed, g, i));
    }
    for (int i : group.send_order) {
      const auto& m = group.entries[static_cast<size_t>(i)];
      uint8_t* p = entry_ptr(arena.data, shape, g, i, n);
      for (;;) {
        void* request = nullptr;
        ncclResult_t r = plugin.isend(send_comm, p, m.send_size, m.tag, mh, &request);
        if (r == ncclRemoteError && tail && options.close_with_requests_in_flight) {
          // The receiver closes with its tail in flight and may do so before an earlier tail
          // send's data reaches it; that send then fails at the receiver, and isend, which
          // polls the CQ while it waits for a clear-to-send, reports the comm's failure. The
          // tail is left untested by design: close the comm with what is in flight.
          out.ok = true;
          return;
        }
        if (r != ncclSuccess) {
          out.error = fail_text("isend", r) + " at group " + std::to_string(g);
          out.result = r;
          return;
        }
        if (request != nullptr) {
          in_flight.push_back({request, g, m.send_size});
          break;
        }
        // Not postable yet (no clear-to-send): make progress on what is in flight.
        if (!in_flight.empty() && !tail) {
          bool completed = false;
          if (!poll_front(&completed)) {
            return;
          }
        }
        if (options.idle) {
          options.idle();
        }
        if (timed_out("waiting for a clear-to-send at group " + std::to_string(g))) {
          return;
        }
      }
    }
  }
  // Complete everything but the tail, which stays in flight across close.
  while (!in_flight.empty() && in_flight.front().group < shape.groups) {
    bool completed = false;
    if (!poll_front(&completed) || timed_out("draining sends")) {
      return;
    }
  }
  if (!options.close_with_requests_in_flight) {
    while (!in_flight.empty()) {
      bool completed = false;
      if (!poll_front(&completed) || timed_out("draining tail sends")) {
        return;
      }
    }
  }
  out.ok = true;
  return;
}

TrafficResult run_sender(PluginDriver& plugin, void* send_comm, uint64_t seed,
                         const PlanShape& shape, const TrafficOptions& options) {
  TrafficResult out;
  sender_body(out, plugin, send_comm, seed, shape, options);
  return out;
}

static void receiver_body(TrafficResult& out, PluginDriver& plugin, void* recv_comm, uint64_t seed,
                          const PlanShape& shape, const TrafficOptions& options) {
  const auto plan = make_plan(seed, shape);
  Arena arena(arena_bytes(shape));
  Closer closer(plugin, recv_comm, false, out, options);
  void* mh = nullptr;
  if (ncclResult_t r = plugin.reg_mr(recv_comm, arena.data, arena.size, options.mr_type, &mh);
      r != ncclSuccess) {
    out.error = fail_text("regMr", r);
    out.result = r;
    return;
  }
  closer.set_mhandle(mh);
  struct InFlight {
    void* request;
    int group;
  };
  std::deque<InFlight> in_flight;
  const auto deadline = Clock::now() + options.deadline;
  auto timed_out = [&](const std::string& what) {
    if (options.peer_failed != nullptr && options.peer_failed->load()) {
      out.error = "stopped " + what + ": the other side failed";
      return true;
    }
    if (Clock::now() > deadline) {
      out.error = "timed out " + what;
      return true;
    }
    return false;
  };

  // Verifies a completed receive and flushes it as NCCL would.
  auto finish = [&](int g, const int* sizes) {
    const auto& group = plan[static_cast<size_t>(g)];
    const int n = static_cast<int>(group.entries.size());
    std::array<void*, 8> ptrs{};
    std::array<void*, 8> mhs{};
    for (int i = 0; i < n; ++i) {
      const auto& m = group.entries[static_cast<size_t>(i)];
      uint8_t* p = entry_ptr(arena.data, shape, g, i, n);
      ptrs[static_cast<size_t>(i)] = p;
      mhs[static_cast<size_t>(i)] = mh;
      const std::string where = "group " + std::to_string(g) + " entry " + std::to_string(i) +
                                " (tag " + std::to_string(m.tag) + ")";
      if (static_cast<size_t>(sizes[i]) != m.send_size) {
        out.error = where + ": test reported " + std::to_string(sizes[i]) + " bytes, sent " +
                    std::to_string(m.send_size);
        return false;
      }
      if (long long bad = find_mismatch(p, m.send_size, message_key(seed, g, i)); bad >= 0) {
        out.error = where + ": wrong byte at offset " + std::to_string(bad) + " of " +
                    std::to_string(m.send_size);
        return false;
      }
      for (size_t k = m.send_size; k < m.recv_size; ++k) {
        if (p[k] != kCanary) {
          out.error = where + ": byte " + std::to_string(k) + " past the " +
                      std::to_string(m.send_size) + " sent bytes was overwritten";
          return false;
        }
      }
      out.bytes += m.send_size;
    }
    if (options.flush) {
      void* flush_request = nullptr;
      ncclResult_t r = plugin.iflush(recv_comm, n, ptrs.data(), sizes, mhs.data(), &flush_request);
      if (r != ncclSuccess) {
        out.error = fail_text("iflush", r);
        out.result = r;
        return false;
      }
      if (flush_request != nullptr) {
        ++out.flushes;
        int done = 0;
        while (!done) {
          r = plugin.test(flush_request, &done, nullptr);
          if (r != ncclSuccess) {
            out.error = fail_text("test (flush)", r);
            out.result = r;
            return false;
          }
          if (timed_out("waiting for a flush")) {
            return false;
          }
        }
      }
    }
    return true;
  };
  auto poll_front = [&](bool* completed) {
    *completed = false;
    int done = 0;
    std::array<int, 8> sizes;
    sizes.fill(-1);
    ncclResult_t r = plugin.test(in_flight.front().request, &done, sizes.data());
    if (r != ncclSuccess) {
      out.error =
          fail_text("test (recv)", r) + " at group " + std::to_string(in_flight.front().group);
      out.result = r;
      return false;
    }
    if (done) {
      const int g = in_flight.front().group;
      in_flight.pop_front();
      *completed = true;
      return finish(g, sizes.data());
    }
    if (options.idle) {
      options.idle();
    }
    return true;
  };

  const int receiver_groups = options.close_with_requests_in_flight
                                  ? static_cast<int>(plan.size())
                                  : shape.groups + shape.tail_in_flight;
  for (int g = 0; g < receiver_groups; ++g) {
    const bool tail = g >= shape.groups;
    while (!tail && !in_flight.empty() && in_flight.front().group <= g - shape.window) {
      bool completed = false;
      if (!poll_front(&completed) || timed_out("waiting for receives")) {
        return;
      }
    }
    if (tail) {
      // Everything before the tail completes first, so the tail's slots are free.
      while (!in_flight.empty() && in_flight.front().group < shape.groups) {
        bool completed = false;
        if (!poll_front(&completed) || timed_out("draining receives")) {
          return;
        }
      }
    }
    const auto& group = plan[static_cast<size_t>(g)];
    const int n = static_cast<int>(group.entries.size());
    std::array<void*, 8> ptrs{};
    std::array<size_t, 8> sizes{};
    std::array<int, 8> tags{};
    std::array<void*, 8> mhs{};
    for (int i = 0; i < n; ++i) {
      const auto& m = group.entries[static_cast<size_t>(i)];
      uint8_t* p = entry_ptr(arena.data, shape, g, i, n);
      std::memset(p, kCanary, m.recv_size);
      ptrs[static_cast<size_t>(i)] = p;
      sizes[static_cast<size_t>(i)] = m.recv_size;
      tags[static_cast<size_t>(i)] = m.tag;
      mhs[static_cast<size_t>(i)] = mh;
    }
    for (;;) {
      void* request = nullptr;
      ncclResult_t r =
          plugin.irecv(recv_comm, n, ptrs.data(), sizes.data(), tags.data(), mhs.data(), &request);
      if (r == ncclRemoteError && tail && options.close_with_requests_in_flight) {
        // The mirror of the sender's tail: the sender may close before a tail clear-to-send
        // reaches it, and irecv reports that when it polls for send-queue room.
        out.ok = true;
        return;
      }
      if (r != ncclSuccess) {
        out.error = fail_text("irecv", r) + " at group " + std::to_string(g);
        out.result = r;
        return;
      }
      if (request != nullptr) {
        in_flight.push_back({request, g});
        break;
      }
      if (!in_flight.empty() && !tail) {
        bool completed = false;
        if (!poll_front(&completed)) {
          return;
        }
      }
      if (options.idle) {
        options.idle();
      }
      if (timed_out("posting a receive at group " + std::to_string(g))) {
        return;
      }
    }
  }
  while (!options.close_with_requests_in_flight && !in_flight.empty()) {
    bool completed = false;
    if (!poll_front(&completed) || timed_out("draining tail receives")) {
      return;
    }
  }
  out.ok = true;
  return;
}

TrafficResult run_receiver(PluginDriver& plugin, void* recv_comm, uint64_t seed,
                           const PlanShape& shape, const TrafficOptions& options) {
  TrafficResult out;
  receiver_body(out, plugin, recv_comm, seed, shape, options);
  return out;
}

bool connect_accept_alternating(PluginDriver& plugin, int send_dev, void* listen_comm,
                                Handle* handle, void** send_comm, void** recv_comm, int timeout_ms,
                                std::string* error) {
  *send_comm = nullptr;
  *recv_comm = nullptr;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (*send_comm == nullptr || *recv_comm == nullptr) {
    if (*send_comm == nullptr) {
      if (ncclResult_t r = plugin.connect(send_dev, handle, send_comm); r != ncclSuccess) {
        *error = fail_text("connect", r);
        return false;
      }
    }
    if (*recv_comm == nullptr) {
      if (ncclResult_t r = plugin.accept(listen_comm, recv_comm); r != ncclSuccess) {
        *error = fail_text("accept", r);
        return false;
      }
    }
    if (Clock::now() > deadline) {
      *error = "connect/accept did not complete within " + std::to_string(timeout_ms) + " ms";
      return false;
    }
  }
  return true;
}

ncclResult_t connect_until_ready(PluginDriver& plugin, int dev, Handle* handle, void** send_comm,
                                 int timeout_ms) {
  *send_comm = nullptr;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (*send_comm == nullptr) {
    if (ncclResult_t r = plugin.connect(dev, handle, send_comm); r != ncclSuccess) {
      return r;
    }
    if (Clock::now() > deadline) {
      return ncclInternalError;
    }
    if (*send_comm == nullptr) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  return ncclSuccess;
}

ncclResult_t accept_until_ready(PluginDriver& plugin, void* listen_comm, void** recv_comm,
                                int timeout_ms) {
  *recv_comm = nullptr;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (*recv_comm == nullptr) {
    if (ncclResult_t r = plugin.accept(listen_comm, recv_comm); r != ncclSuccess) {
      return r;
    }
    if (Clock::now() > deadline) {
      return ncclInternalError;
    }
    if (*recv_comm == nullptr) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  return ncclSuccess;
}

std::string handle_to_hex(const Handle& handle) {
  static const char* digits = "0123456789abcdef";
  std::string text;
  for (char c : handle) {
    const auto b = static_cast<uint8_t>(c);
    text.push_back(digits[b >> 4]);
    text.push_back(digits[b & 15]);
  }
  return text;
}

bool handle_from_hex(const std::string& text, Handle* handle) {
  if (text.size() != handle->size() * 2) {
    return false;
  }
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < handle->size(); ++i) {
    int hi = value(text[2 * i]);
    int lo = value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    (*handle)[i] = static_cast<char>(hi * 16 + lo);
  }
  return true;
}

}  // namespace roce::test
