// ConnectedComm: see connected_comm.h.
#include "core/datapath/connected_comm.h"

#include "core/datapath/completion_status.h"
#include "core/telemetry_settings.h"
#include "telemetry/profiler_events.h"

namespace roce {

ConnectedComm::ConnectedComm(CommKind kind, std::shared_ptr<DeviceRuntime> device,
                             ConnectionSetup setup)
    : Comm(kind, std::move(device)),
      checks_due_(&this->device().monitor()->checks_due_counter()),
      nqps_(static_cast<int>(setup.qps.size())),
      split_data_(setup.split_data),
      profiling_(telemetry::profiler() != nullptr),
      cq_(std::move(setup.cq)),
      qps_(std::move(setup.qps)),
      traffic_class_(setup.traffic_class),
      peer_(std::move(setup.peer)),
      telemetry_({kind == CommKind::Send ? telemetry::Direction::Send : telemetry::Direction::Recv,
                  this->device().name(), peer_, nqps_, traffic_class_},
                 telemetry_settings(), this->device().fabric()) {
  for (int q = 0; q < nqps_; ++q) {
    qp_ptrs_[static_cast<size_t>(q)] = qps_[static_cast<size_t>(q)].get();
  }
}

ConnectedComm::~ConnectedComm() = default;

ncclResult_t ConnectedComm::count_failure(ncclResult_t result) noexcept {
  telemetry_.stats().failed();
  return result;
}

ncclResult_t ConnectedComm::fail_poll(int got) noexcept {
  return fail(ncclSystemError, "polling cq {} failed ({}); the device may have failed", cq_->id(),
              got);
}

ncclResult_t ConnectedComm::fail_completion(const ibv_wc& wc) noexcept {
  const CompletionStatusInfo info = completion_status_info(wc.status);
  return fail(info.result,
              "completion error {} ({}), vendor_err 0x{:x}, opcode {}, qp 0x{:x}; local gid {} "
              "(index {}) {} {}; {}",
              info.name, static_cast<int>(wc.status), wc.vendor_err, static_cast<int>(wc.opcode),
              wc.qp_num, device().gid_text(), device().gid_index(),
              kind() == CommKind::Send ? "->" : "<-", peer_, info.hint);
}

ncclResult_t ConnectedComm::fail_unexpected_wr_id(const ibv_wc& wc) noexcept {
  return fail(ncclInternalError, "completion with unexpected wr_id 0x{:x} on qp 0x{:x}", wc.wr_id,
              wc.qp_num);
}

ncclResult_t ConnectedComm::run_health_checks() noexcept {
  if (device().fatal()) [[unlikely]] {
    return fail(ncclSystemError,
                "the device reported a fatal asynchronous event (see the event logged "
                "above); connection {} {} is lost",
                direction(), peer_);
  }
  if (cq_->has_fatal_event()) [[unlikely]] {
    return fail(ncclSystemError, "cq {} reported IBV_EVENT_CQ_ERR (overrun); connection {} {}",
                cq_->id(), direction(), peer_);
  }
  for (int q = 0; q < nqps_; ++q) {
    const verbs::QueuePair* qp = qp_ptrs_[static_cast<size_t>(q)];
    if (qp->has_fatal_event()) [[unlikely]] {
      return fail(ncclRemoteError, "qp 0x{:x} reported a fatal asynchronous event; {} {}",
                  qp->qp_num(), direction(), peer_);
    }
  }
  return check_side_health();
}

}  // namespace roce
