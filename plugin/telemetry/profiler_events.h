// NCCL's profiler, fed as net_ib feeds it: v10 and v11 pass a profiler callback to init and a
// profiler handle with each isend and each irecv buffer. For every request that has a handle,
// the plugin starts one QP event when it posts the request's signaled work request (the WRITE
// WITH IMMEDIATE of a send, the receive of an irecv buffer), with net_ib's v1 descriptor (device,
// wr_id, opcode, QP number, length), and stops it when the request completes. Profiler plugins
// and NCCL's Inspector then show our traffic as they show net_ib's. Without a callback or a
// handle (v8, v9, no profiler loaded) this costs one predictable branch per request.
#pragma once

#include <atomic>

#include "nccl_net/profiler_net.h"
#include "nccl_net/types.h"

namespace roce::telemetry {

namespace profiler_detail {
inline std::atomic<ncclProfilerCallback_t> callback{nullptr};
}

// The callback NCCL passed to init (the last one wins: NCCL passes the same function each time).
void set_profiler(ncclProfilerCallback_t cb) noexcept;
inline ncclProfilerCallback_t profiler() noexcept {
#if defined(ROCE_TELEMETRY_BASELINE)
  return nullptr;  // the hooks' cost baseline: no profiler events
#endif
  return profiler_detail::callback.load(std::memory_order_acquire);
}

// One request's profiler event, kept in the request (the descriptor must outlive the start call:
// profilers may keep the pointer until the stop).
struct ProfilerEvent {
  void* phandle = nullptr;  // from NCCL; nullptr: no event
  void* handle = nullptr;   // the profiler's event handle, set by the start call
  ncclProfilerNetIbDescr_v1_t descr{};

  void start(int device, uint64_t wr_id, int opcode, uint32_t qp_num, size_t length) noexcept;
  // Inline: without an event this is one compare (phandle is set again with every post).
  void stop() noexcept {
    if (handle != nullptr) [[unlikely]] {
      stop_event();
    }
  }

 private:
  void stop_event() noexcept;
};

}  // namespace roce::telemetry
