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
      more_cqs_count_(static_cast<int>(setup.more_cqs.size())),
      member_count_(static_cast<int>(setup.more_cqs.size()) + 1),
      qps_per_member_(static_cast<int>(setup.qps.size()) /
                      (static_cast<int>(setup.more_cqs.size()) + 1)),
      device_id_(setup.device_id),
      split_data_(setup.split_data),
      profiling_(telemetry::profiler() != nullptr),
      cq_(std::move(setup.cq)),
      more_cqs_(std::move(setup.more_cqs)),
      members_(std::move(setup.members)),
      qps_(std::move(setup.qps)),
      traffic_class_(setup.traffic_class),
      peer_(std::move(setup.peer)),
      telemetry_({kind == CommKind::Send ? telemetry::Direction::Send : telemetry::Direction::Recv,
                  this->device().name(), peer_, nqps_, traffic_class_},
                 telemetry_settings(), this->device().fabric()),
      peer_watch_(std::move(setup.peer_watch)) {
  for (int q = 0; q < nqps_; ++q) {
    qp_ptrs_[static_cast<size_t>(q)] = qps_[static_cast<size_t>(q)].get();
    qp_member_[static_cast<size_t>(q)] = static_cast<uint8_t>(q / qps_per_member_);
  }
  if (members_.empty()) {
    members_.push_back(device_ptr());  // setups that name no members run on the comm's device
  }
}

int ConnectedComm::poll_members() noexcept {
  // Every member's CQ in turn, starting one further each time, until the batch is full.
  int got = 0;
  for (int i = 0; i < member_count_ && got < kPollBatch; ++i) {
    const int m = (next_member_cq_ + i) % member_count_;
    verbs::CompletionQueue& cq = m == 0 ? *cq_ : *more_cqs_[static_cast<size_t>(m - 1)];
    const int n = cq.poll(kPollBatch - got, wcs_.data() + got);
    if (n < 0) {
      return n;
    }
    got += n;
  }
  next_member_cq_ = (next_member_cq_ + 1) % member_count_;
  return got;
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
  for (const auto& member : members_) {
    if (member->fatal()) [[unlikely]] {
      return fail(ncclSystemError,
                  "the device {} reported a fatal asynchronous event (see the event logged "
                  "above); connection {} {} is lost",
                  member->name(), direction(), peer_);
    }
  }
  for (int m = 0; m < member_count_; ++m) {
    const verbs::CompletionQueue& cq = m == 0 ? *cq_ : *more_cqs_[static_cast<size_t>(m - 1)];
    if (cq.has_fatal_event()) [[unlikely]] {
      return fail(ncclSystemError, "cq {} reported IBV_EVENT_CQ_ERR (overrun); connection {} {}",
                  cq.id(), direction(), peer_);
    }
  }
  for (int q = 0; q < nqps_; ++q) {
    const verbs::QueuePair* qp = qp_ptrs_[static_cast<size_t>(q)];
    if (qp->has_fatal_event()) [[unlikely]] {
      return fail(ncclRemoteError, "qp 0x{:x} reported a fatal asynchronous event; {} {}",
                  qp->qp_num(), direction(), peer_);
    }
  }
  if (peer_watch_ != nullptr && peer_watch_->state().gone()) [[unlikely]] {
    // Every request of the comm fails from here on, receives that nothing else would end too.
    return fail(ncclRemoteError,
                "{}; connection {} it is lost: the peer process died (killed, crashed, out of "
                "memory) or its host stopped answering, without closing its comms; its own log "
                "says why",
                peer_watch_->state().reason(), direction());
  }
  return check_side_health();
}

}  // namespace roce
