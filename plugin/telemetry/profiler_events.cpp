// NCCL profiler events for the plugin's requests.
#include "telemetry/profiler_events.h"

namespace roce::telemetry {
void set_profiler(ncclProfilerCallback_t cb) noexcept {
  if (cb != nullptr) {
    profiler_detail::callback.store(cb, std::memory_order_release);
  }
}

void ProfilerEvent::start(int device, uint64_t wr_id, int opcode, uint32_t qp_num,
                          size_t length) noexcept {
  handle = nullptr;
  const ncclProfilerCallback_t cb = profiler();
  if (phandle == nullptr || cb == nullptr) {
    return;
  }
  descr.type = ncclProfileQp;
  descr.qp.device = device;
  descr.qp.wr_id = wr_id;
  descr.qp.opcode = opcode;
  descr.qp.qpNum = static_cast<int>(qp_num);
  descr.qp.length = length;
  const auto plugin_id = static_cast<int64_t>(NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER);
  // A profiler's error must not fail the transfer: NCCL's own callback always succeeds, and a
  // missing event is better than a failed job.
  if (cb(&handle, ncclProfilerNetEventStart, phandle, plugin_id, &descr) != ncclSuccess) {
    handle = nullptr;
  }
}

void ProfilerEvent::stop_event() noexcept {
  if (const ncclProfilerCallback_t cb = profiler(); cb != nullptr) {
    cb(&handle, ncclProfilerNetEventStop, nullptr, 0, nullptr);
  }
  handle = nullptr;
}

}  // namespace roce::telemetry
