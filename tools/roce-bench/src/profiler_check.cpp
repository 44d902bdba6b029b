// The profiler callback roce-bench hands to v10/v11 plugins.
#include "profiler_check.h"

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <unordered_set>

#include "nccl_net/profiler_net.h"

namespace roce::bench {
namespace {

std::mutex mutex;
ProfilerTally tally;
std::unordered_set<std::uint64_t> open_events;
std::uint64_t next_event = 1;
std::atomic<std::uint64_t> sent_bytes{0};
char handle_token;  // the address is the profiler handle; its value is never read

void problem(const std::string& text) {
  ++tally.bad;
  if (tally.first_problem.empty()) {
    tally.first_problem = text;
  }
}

ncclResult_t callback(void** event, int type, void* phandle, int64_t plugin_id, void* data) {
  const std::lock_guard lock(mutex);
  if (event == nullptr) {
    problem("a profiler call with a NULL event handle pointer");
    return ncclSuccess;
  }
  if (type == ncclProfilerNetEventStart) {
    const auto* d = static_cast<const ncclProfilerNetIbDescr_v1_t*>(data);
    const auto want = static_cast<int64_t>(NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER);
    if (phandle != &handle_token) {
      problem("an event started with a profiler handle roce-bench never passed");
    } else if (plugin_id != want || d == nullptr || d->type != ncclProfileQp || d->qp.qpNum <= 0) {
      problem(fmt::format("a malformed event start (pluginId 0x{:x}, type {}, qpNum {})", plugin_id,
                          d != nullptr ? d->type : -1, d != nullptr ? d->qp.qpNum : -1));
    }
    ++tally.starts;
    if (d != nullptr && d->qp.opcode != 0) {
      ++tally.send_starts;
      tally.send_bytes += d->qp.length;
    } else {
      ++tally.recv_starts;
    }
    const std::uint64_t id = next_event++;
    open_events.insert(id);
    *event = reinterpret_cast<void*>(static_cast<std::uintptr_t>(id));
    return ncclSuccess;
  }
  if (type == ncclProfilerNetEventStop || type == ncclProfilerNetEventUpdateAndStop) {
    const auto id = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(*event));
    if (open_events.erase(id) == 0) {
      problem("a stop of an event that was never started, or was stopped already");
    }
    ++tally.stops;
    return ncclSuccess;
  }
  if (type != ncclProfilerNetEventUpdate) {
    problem(fmt::format("a profiler call of unknown type {}", type));
  }
  return ncclSuccess;
}

}  // namespace

ncclProfilerCallback_t profiler_callback() {
  return &callback;
}

void* profiler_handle() {
  return &handle_token;
}

ProfilerTally profiler_tally() {
  const std::lock_guard lock(mutex);
  return tally;
}

void profiler_note_send(std::uint64_t bytes) {
  sent_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

std::uint64_t profiler_sent_bytes() {
  return sent_bytes.load(std::memory_order_relaxed);
}

std::string profiler_problem(const ProfilerTally& t, std::uint64_t sent) {
  if (t.bad != 0) {
    return fmt::format("{} bad profiler event call(s), the first: {}", t.bad, t.first_problem);
  }
  if (t.starts == 0) {
    return "";
  }
  if (t.starts != t.stops) {
    return fmt::format("{} profiler events started but {} stopped", t.starts, t.stops);
  }
  if (t.send_starts != 0 && t.send_bytes != sent) {
    return fmt::format("send events report {} bytes, the isends carried {}", t.send_bytes, sent);
  }
  return "";
}

}  // namespace roce::bench
