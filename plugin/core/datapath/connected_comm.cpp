// ConnectedComm: see connected_comm.h.
#include "core/datapath/connected_comm.h"

#include <thread>

#include "core/datapath/completion_status.h"
#include "core/datapath/wr_id.h"
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
      lane_count_(member_count_),
      qps_per_member_(static_cast<int>(setup.qps.size()) /
                      (static_cast<int>(setup.more_cqs.size()) + 1)),
      device_id_(setup.device_id),
      split_data_(setup.split_data),
      profiling_(telemetry::profiler() != nullptr),
      cq_(std::move(setup.cq)),
      more_cqs_(std::move(setup.more_cqs)),
      members_(std::move(setup.members)),
      qps_(std::move(setup.qps)),
      recovery_(std::make_unique<RecoveryState>(std::move(setup.recovery))),
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

std::string ConnectedComm::completion_text(const ibv_wc& wc) const {
  const CompletionStatusInfo info = completion_status_info(wc.status);
  // The member whose QP it was (a virtual NIC's failure is one member's link), and that
  // member's own peer address when it is not the first.
  int member = 0;
  for (int q = 0; q < nqps_; ++q) {
    if (qp_ptrs_[static_cast<size_t>(q)]->qp_num() == wc.qp_num) {
      member = qp_member_[static_cast<size_t>(q)];
      break;
    }
  }
  const DeviceRuntime& local = *members_[static_cast<size_t>(member)];
  return fmt::format(
      "completion error {} ({}), vendor_err 0x{:x}, opcode {}, qp 0x{:x}; local {}gid {} (index "
      "{}) {} {}{}; {}",
      info.name, static_cast<int>(wc.status), wc.vendor_err, static_cast<int>(wc.opcode), wc.qp_num,
      member_count_ > 1 ? fmt::format("dev {} ", local.name()) : std::string(), local.gid_text(),
      local.gid_index(), kind() == CommKind::Send ? "->" : "<-", peer_,
      member_count_ > 1 ? fmt::format(" (its member {})", member) : std::string(), info.hint);
}

ncclResult_t ConnectedComm::fail_completion(const ibv_wc& wc) noexcept {
  try {
    return fail(completion_status_info(wc.status).result, "{}", completion_text(wc));
  } catch (const std::exception&) {
    return fail(completion_status_info(wc.status).result, "completion error {} on qp 0x{:x}",
                static_cast<int>(wc.status), wc.qp_num);
  }
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
  // An epoch's fenced QPs are in ERR on purpose; their marks are not the comm's failure.
  for (int q = 0; !recovering() && q < nqps_; ++q) {
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
  // An epoch in progress, a frame from the peer, or a member left out whose port may be back.
  if (recovering() || lane_count_ != member_count_ ||
      (peer_watch_ != nullptr && peer_watch_->state().has_epoch_frames())) [[unlikely]] {
    if (ncclResult_t r = step_recovery(); r != ncclSuccess) {
      return r;
    }
  }
  return check_side_health();
}

bool ConnectedComm::can_recover(const ibv_wc& wc) noexcept {
  const bool transport_failure = wc.status == IBV_WC_RETRY_EXC_ERR ||
                                 wc.status == IBV_WC_RNR_RETRY_EXC_ERR ||
                                 wc.status == IBV_WC_WR_FLUSH_ERR;
  // Only the data QPs' work requests: a flush QP's READ goes through no link to the peer.
  const bool data_qp = wr_id_is(wc.wr_id, WrKind::SendGroup) || wr_id_is(wc.wr_id, WrKind::Recv) ||
                       wr_id_is(wc.wr_id, WrKind::CtsWrite);
  if (!transport_failure || !data_qp) {
    return false;
  }
  RecoverySetup& setup = recovery_->setup;
  if (!setup.enabled) {
    if (!recovery_->told_off) {
      recovery_->told_off = true;
      ROCE_WARN(NCCL_NET, "{} comm on {}: connection {} {} is not recovered: {}", kind_name(),
                device().name(), direction(), peer_, setup.off_reason);
    }
    return false;
  }
  return peer_watch_ != nullptr && !peer_watch_->state().gone();
}

ncclResult_t ConnectedComm::fence_data_qps() noexcept {
  using Clock = std::chrono::steady_clock;
  int markers = 0;
  for (int q = 0; q < nqps_; ++q) {
    verbs::QueuePair& qp = *qp_ptrs_[static_cast<size_t>(q)];
    try {
      qp.to_error();
    } catch (const std::exception& e) {
      return fail(ncclSystemError, "recovery of the connection {} {}: {}", direction(), peer_,
                  e.what());
    }
    // In ERR each queue completes in order with a flush status, so once both markers are back
    // nothing more can come from this QP.
    ibv_recv_wr recv_marker{};
    recv_marker.wr_id = pack_wr_id(WrKind::Fence, static_cast<uint8_t>(q), 0);
    ibv_recv_wr* bad_recv = nullptr;
    markers += qp.post_recv(&recv_marker, &bad_recv) == 0 ? 1 : 0;
    ibv_send_wr send_marker{};
    send_marker.wr_id = pack_wr_id(WrKind::Fence, static_cast<uint8_t>(q), 1);
    send_marker.opcode = IBV_WR_SEND;
    send_marker.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad_send = nullptr;
    markers += qp.post_send(&send_marker, &bad_send) == 0 ? 1 : 0;
  }
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (markers > 0) {
    const int got = poll_cq();
    if (got < 0) {
      return fail_poll(got);
    }
    for (int k = 0; k < got; ++k) {
      const ibv_wc wc = wcs_[static_cast<size_t>(k)];
      if (wr_id_is(wc.wr_id, WrKind::Fence)) {
        --markers;
      } else if (wc.status == IBV_WC_SUCCESS) {
        if (ncclResult_t r = absorb_fenced(wc); r != ncclSuccess) {
          return r;
        }
      }
      // Anything else failed or was flushed with the QPs: the epoch's record covers it.
    }
    if (got == 0) {
      if (Clock::now() >= give_up) {
        return fail(ncclSystemError,
                    "recovery of the connection {} {}: the device did not flush the failed QPs "
                    "within 10 s",
                    direction(), peer_);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  return ncclSuccess;
}

uint8_t ConnectedComm::members_up() const noexcept {
  uint8_t up = 0;
  for (int m = 0; m < member_count_; ++m) {
    const DeviceRuntime& member = *members_[static_cast<size_t>(m)];
    try {
      if (member.context()->query_port(member.port()).attr.state == IBV_PORT_ACTIVE) {
        up = static_cast<uint8_t>(up | (1U << m));
      }
    } catch (const std::exception&) {
      // Unreadable: taken as down; the wait for a port says so at its deadline.
    }
  }
  return up;
}

uint8_t ConnectedComm::members_up_paced() noexcept {
  const auto now = std::chrono::steady_clock::now();
  if (now - recovery_->ports_seen_at >= std::chrono::milliseconds(1)) {
    recovery_->ports_up = members_up();
    recovery_->ports_seen_at = now;
  }
  return recovery_->ports_up;
}

uint8_t ConnectedComm::lanes_mask() const noexcept {
  uint8_t mask = 0;
  for (int q = 0; q < nqps_; ++q) {
    mask = static_cast<uint8_t>(mask | (1U << qp_member_[static_cast<size_t>(q)]));
  }
  return mask;
}

void ConnectedComm::install_qps(std::vector<std::unique_ptr<verbs::QueuePair>> qps,
                                const std::vector<uint8_t>& members) {
  qps_ = std::move(qps);  // the old QPs (in ERR, drained) are destroyed here
  nqps_ = static_cast<int>(qps_.size());
  for (int q = 0; q < nqps_; ++q) {
    qp_ptrs_[static_cast<size_t>(q)] = qps_[static_cast<size_t>(q)].get();
    qp_member_[static_cast<size_t>(q)] = members[static_cast<size_t>(q)];
  }
  lane_count_ = nqps_ / qps_per_member_;
}

bool ConnectedComm::send_epoch_frame(const net::EpochFrame& frame) noexcept {
  try {
    auto bytes = net::encode_epoch_frame(frame);
    if (!bytes) {
      ROCE_WARN(NCCL_NET, "{} comm on {}: {}", kind_name(), device().name(), bytes.error());
      return false;
    }
    if (peer_watch_ == nullptr) {
      return false;
    }
    if (const Status sent = peer_watch_->send(*bytes); !sent) {
      ROCE_WARN(NCCL_NET, "{} comm on {}: {} to {} not sent: {}", kind_name(), device().name(),
                net::epoch_kind_name(net::kind_of(frame)), peer_, sent.error());
      return false;
    }
    return true;
  } catch (const std::exception& e) {
    ROCE_WARN(NCCL_NET, "{} comm on {}: an epoch frame to {} not sent: {}", kind_name(),
              device().name(), peer_, e.what());
    return false;
  }
}

std::string ConnectedComm::members_text(uint8_t mask) const {
  std::string text;
  for (int m = 0; m < member_count_; ++m) {
    if (((mask >> m) & 1U) != 0) {
      text += fmt::format("{}{} port {}", text.empty() ? "" : ", ",
                          members_[static_cast<size_t>(m)]->name(),
                          members_[static_cast<size_t>(m)]->port());
    }
  }
  return text.empty() ? "none" : text;
}

void ConnectedComm::report_recovered(const char* what, uint64_t resent, uint64_t marked) noexcept {
  RecoveryState& st = *recovery_;
  const auto took = std::chrono::steady_clock::now() - st.began;
  const auto us =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(took).count());
  ++st.recoveries;
  st.recovered_us += us;
  st.resent += resent;
  telemetry_.stats().recovered(us);
  // One WARN per recovery; an epoch that follows one during which no message completed (a path
  // that still loses everything, about to fail the comm) is an INFO line.
  const bool again = st.fruitless > 0;
  try {
    ::roce::log::write(
        again ? NCCL_LOG_INFO : NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__,
        "{} comm on {}: connection {} {} recovered in {:.1f} ms (epoch {}, {}): it carries "
        "on over {}{}{}; {} message(s) sent again, {} already complete; cause: {}",
        kind_name(), device().name(), direction(), peer_, static_cast<double>(us) / 1000.0,
        st.epoch, what, members_text(lanes_mask()),
        lanes_mask() != all_members_mask() ? "; left out until the ports of both ends are ACTIVE: "
                                           : "",
        lanes_mask() != all_members_mask()
            ? members_text(static_cast<uint8_t>(all_members_mask() & ~lanes_mask()))
            : "",
        resent, marked, st.cause);
  } catch (const std::exception&) {
  }
}

}  // namespace roce
