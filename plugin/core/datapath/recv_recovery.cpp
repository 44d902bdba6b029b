// The receiver's side of a recovery epoch (docs/design.md, "Recovery epochs"). The receiver
// answers the sender's epochs: on EpochStart it fences its QPs (handling every completion already
// there, so that its record is final), makes new QPs connected to the sender's, posts their
// receives and answers EpochReady with what it completed and the clear-to-send entries of every
// receive in flight, rewritten with the keys of the member that carries each from then on. A
// failure it sees first (its clear-to-send write failed) fences its QPs and asks the sender for
// an epoch (EpochWanted). From the fence until the sender's EpochGo every irecv is held (no
// clear-to-send credit) and returns no request: the sender's new QPs take no write before they
// are connected.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "core/datapath/recv_comm.h"
#include "core/datapath/wr_id.h"
#include "util/log.h"
#include "verbs/error.h"
#include "verbs/queue_pair.h"

namespace roce {
namespace {

using Clock = std::chrono::steady_clock;

uint32_t random_epoch_psn() {
  static thread_local std::mt19937 random{std::random_device{}()};
  return random() & net::kMaxPsn;
}

}  // namespace

ncclResult_t RecvComm::on_failed_completion(int k, int got) noexcept {
  const ibv_wc wc = wcs_[static_cast<size_t>(k)];
  if (!can_recover(wc)) {
    return fail_completion(wc);
  }
  for (int j = k + 1; j < got; ++j) {
    const ibv_wc& next = wcs_[static_cast<size_t>(j)];
    if (next.status == IBV_WC_SUCCESS) {
      if (ncclResult_t r = absorb_fenced(next); r != ncclSuccess) {
        return r;
      }
    }
  }
  RecoveryState& st = *recovery_;
  if (st.phase != EpochPhase::Normal) {
    return ncclSuccess;  // already fenced; a late failure of the old QPs
  }
  try {
    st.began = Clock::now();
    st.cause = completion_text(wc);
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "{}", e.what());
  }
  if (ncclResult_t r = fence_and_hold(); r != ncclSuccess) {
    return r;
  }
  st.phase = EpochPhase::WaitingForStart;
  st.deadline = Clock::now() + std::chrono::seconds(st.setup.timeout_s);
  net::EpochWanted wanted;
  wanted.nonce = st.setup.nonce;
  wanted.epoch = st.epoch;
  wanted.down_members = static_cast<uint8_t>(all_members_mask() & ~members_up());
  if (!send_epoch_frame(wanted)) {
    return fail(ncclRemoteError, "{}; no recovery: the peer watch's connection to {} is closed",
                st.cause, peer_);
  }
  ROCE_INFO(NCCL_NET, "recv comm on {}: connection from {} asks for a recovery epoch: {}",
            device().name(), peer_, st.cause);
  keep_checking();
  return ncclSuccess;
}

ncclResult_t RecvComm::fence_and_hold() noexcept {
  if (ncclResult_t r = fence_data_qps(); r != ncclSuccess) {
    return r;
  }
  cts_credits_ = SendQueueCredits(0, kCtsSignalInterval);
  return ncclSuccess;
}

ncclResult_t RecvComm::step_recovery() noexcept {
  RecoveryState& st = *recovery_;
  if (peer_watch_ != nullptr && peer_watch_->state().has_epoch_frames()) {
    std::vector<net::EpochFrame> frames;
    try {
      frames = peer_watch_->take_epoch_frames();
    } catch (const std::exception& e) {
      return fail(ncclSystemError, "{}", e.what());
    }
    for (net::EpochFrame& frame : frames) {
      if (auto* start = std::get_if<net::EpochStart>(&frame)) {
        if (!st.setup.enabled) {
          continue;  // recovery is off here; the sender's epoch waits out its bound
        }
        if (start->epoch <= st.epoch) {
          continue;  // superseded
        }
        if (st.phase == EpochPhase::Normal || st.phase == EpochPhase::WaitingForGo) {
          if (st.phase == EpochPhase::Normal) {
            st.began = Clock::now();
            st.cause = "the sender started an epoch (its QPs failed, or a member rejoins)";
          }
          if (ncclResult_t r = fence_and_hold(); r != ncclSuccess) {
            return r;
          }
        }
        st.pending_start = std::move(*start);
        st.phase = EpochPhase::WaitingForPort;
        st.deadline = Clock::now() + std::chrono::seconds(st.setup.timeout_s);
      } else if (const auto* go = std::get_if<net::EpochGo>(&frame)) {
        if (st.phase == EpochPhase::WaitingForGo && go->epoch == st.epoch) {
          cts_credits_ =
              SendQueueCredits(qps_.front()->capabilities().max_send_wr - 1, kCtsSignalInterval);
          st.phase = EpochPhase::Normal;
          // As the sender counts them: an epoch after one with no message completed since is
          // a repeat, logged at INFO (the sender fails the comm after a few).
          const uint64_t messages = telemetry_.stats().messages();
          st.fruitless =
              st.recoveries > 0 && messages == st.messages_at_epoch ? st.fruitless + 1 : 0;
          report_recovered(lanes_mask() != all_members_mask() ? "a member left out" : "all members",
                           0, 0);
          st.messages_at_epoch = messages;
          st.cause.clear();
        }
      } else {
        return fail(ncclRemoteError, "{} sent {} to the receiving end of the connection", peer_,
                    net::epoch_kind_name(net::kind_of(frame)));
      }
    }
  }
  const auto now = Clock::now();
  switch (st.phase) {
    case EpochPhase::WaitingForPort: {
      const uint8_t live = static_cast<uint8_t>(
          members_up_paced() & st.pending_start->live_members & all_members_mask());
      if (live == 0) {
        if (now >= st.deadline) {
          return fail(ncclRemoteError,
                      "{}; no port of {} that the sender can use came back within "
                      "NCCL_ROCE_RECOVERY_TIMEOUT_S ({} s): the connection from {} is lost. "
                      "Check the link (ibv_devinfo, the switch port)",
                      st.cause, members_text(all_members_mask()), st.setup.timeout_s, peer_);
        }
        keep_checking();
        return ncclSuccess;
      }
      const net::EpochStart start = std::move(*st.pending_start);
      st.pending_start.reset();
      return answer_start(start, live);
    }
    case EpochPhase::WaitingForStart:
    case EpochPhase::WaitingForGo:
      if (peer_watch_ != nullptr && peer_watch_->state().closed()) {
        return fail(ncclRemoteError, "{}; the sender {} closed its comm during recovery", st.cause,
                    peer_);
      }
      if (now >= st.deadline) {
        return fail(ncclRemoteError,
                    "{}; the sender {} did not {} within NCCL_ROCE_RECOVERY_TIMEOUT_S ({} s): "
                    "its ports stayed down, or it is not calling into NCCL",
                    st.cause, peer_,
                    st.phase == EpochPhase::WaitingForStart ? "start a recovery epoch"
                                                            : "finish recovery epoch",
                    st.setup.timeout_s);
      }
      keep_checking();
      return ncclSuccess;
    case EpochPhase::Normal:
      return ask_for_rejoin(now);
    default:
      return ncclSuccess;
  }
}

ncclResult_t RecvComm::ask_for_rejoin(std::chrono::steady_clock::time_point now) noexcept {
  // Members this side left out for their ports (answer_start) whose ports are back. The sender
  // cannot see them come back: its own ports were up all along, and its blind rejoins back off to
  // a minute apart. It takes the member back at its next call that may start an epoch.
  RecoveryState& st = *recovery_;
  if (!st.setup.enabled || st.down_members == 0 || now < st.next_rejoin) {
    return ncclSuccess;
  }
  const auto back = static_cast<uint8_t>(members_up_paced() & st.down_members);
  if (back == 0) {
    return ncclSuccess;
  }
  net::EpochWanted wanted;
  wanted.nonce = st.setup.nonce;
  wanted.epoch = st.epoch;
  wanted.down_members = static_cast<uint8_t>(st.down_members & ~back);
  wanted.back_members = back;
  st.delay_next_rejoin(now);
  if (!send_epoch_frame(wanted)) {
    st.down_members = 0;  // the watch is closed: no epoch can be agreed; the comm carries on
    return ncclSuccess;
  }
  ROCE_INFO(NCCL_NET,
            "recv comm on {}: connection from {} asks the sender to take back {}: ACTIVE again",
            device().name(), peer_, members_text(back));
  return ncclSuccess;
}

ncclResult_t RecvComm::answer_start(const net::EpochStart& start, uint8_t live) noexcept {
  RecoveryState& st = *recovery_;
  // The sender's QPs on the members both ends can use, member by member: each gets a QP of ours
  // on the same member.
  std::vector<std::unique_ptr<verbs::QueuePair>> qps;
  std::vector<uint8_t> members;
  net::EpochReady ready;
  ready.nonce = st.setup.nonce;
  ready.epoch = start.epoch;
  ready.next_seq = start.next_seq;
  ready.live_members = live;
  try {
    for (const net::EpochQp& theirs : start.qps) {
      if (((live >> theirs.member) & 1U) == 0) {
        continue;
      }
      const uint32_t psn = random_epoch_psn();
      auto qp = st.setup.remaker.create(theirs.member);
      st.setup.remaker.connect(*qp, theirs.member, theirs.qpn, theirs.psn, psn);
      ready.qps.push_back({theirs.member, qp->qp_num(), psn});
      members.push_back(theirs.member);
      qps.push_back(std::move(qp));
    }
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "{}; recovery epoch {}: new QPs: {}", st.cause, start.epoch,
                e.what());
  }
  if (qps.empty() || qps.size() % static_cast<size_t>(qps_per_member_) != 0 ||
      start.next_seq > next_seq_) {
    return fail(ncclRemoteError,
                "recovery epoch {} from {} does not fit this connection ({} QPs on the live "
                "members, {} per member; the sender's next message {} with {} receives posted); "
                "the peer is not a compatible RoCE plugin",
                start.epoch, peer_, qps.size(), qps_per_member_, start.next_seq, next_seq_ - 1);
  }
  // What this side completed below the sender's next message: final, since the fence.
  std::vector<uint64_t> incomplete;
  for (uint16_t i = 0; i < requests_.capacity(); ++i) {
    if (requests_.in_use(i) && requests_[i].state == RequestState::Pending) {
      incomplete.push_back(requests_[i].seq);
    }
  }
  const CompletedRecord record = completed_record(start.next_seq, incomplete);
  ready.low_seq = record.low;
  ready.done = record.done;
  try {
    install_qps(std::move(qps), members);
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "{}; recovery epoch {}: {}", st.cause, start.epoch, e.what());
  }
  // Clear-to-send writes leave through QP 0, now on the first member both ends keep: the
  // sender's ring key and this side's staging key on that member.
  const uint8_t cts_member = member_of_qp(0);
  size_t key = 0;
  for (int m = 0; m < cts_member; ++m) {
    key += (start.live_members >> m) & 1U;
  }
  remote_ring_rkey_ = start.ring_rkeys[key];
  cts_wr_.wr.rdma.rkey = remote_ring_rkey_;
  cts_staging_lkey_ = cts_staging_buffer_.lkey(cts_member);
  cts_sge_.lkey = cts_staging_lkey_;
  // Each new QP starts at the first message of its stride from `low` on; the sender fills the
  // places of completed ones with markers.
  const auto nqps = static_cast<uint8_t>(nqps_);
  recv_seq_step_ = split_data_ ? static_cast<uint64_t>(lane_count_)
                               : static_cast<uint64_t>(nqps_ <= 1 ? 1 : nqps_);
  for (uint8_t q = 0; q < nqps; ++q) {
    next_recv_seq_[q] = split_data_
                            ? first_seq_of_lane(record.low, q / qps_per_member_, lane_count_)
                            : first_seq_of_lane(record.low, q, nqps_);
    recvs_to_repost_[q] = 0;
    for (uint32_t posted = 0; posted < kPrePostedRecvs; posted += kRecvRepostBatch) {
      if (int rc = post_receive_batch(q); rc != 0) {
        return fail(ncclSystemError, "recovery epoch {}: ibv_post_recv on qp 0x{:x} failed: {}",
                    start.epoch, qp_ptrs_[q]->qp_num(), verbs::errno_text(rc));
      }
    }
  }
  // The receives in flight, in sequence order: their parts restart, and their entries (with the
  // keys of the member that carries each message now) go to the sender.
  std::vector<uint16_t> in_flight;
  for (uint16_t i = 0; i < requests_.capacity(); ++i) {
    if (requests_.in_use(i) && requests_[i].state == RequestState::Pending &&
        requests_[i].seq >= record.low) {
      in_flight.push_back(i);
    }
  }
  std::sort(in_flight.begin(), in_flight.end(),
            [&](uint16_t a, uint16_t b) { return requests_[a].seq < requests_[b].seq; });
  try {
    for (const uint16_t index : in_flight) {
      RecvRequest& r = requests_[index];
      r.remaining_qps = static_cast<uint8_t>(split_data_ ? qps_per_member_ : 1);
      const uint8_t member = member_count_ == 1 ? 0 : member_of_message(r.seq);
      CtsEntry* staged = cts_staging_ + size_t{index} * kMaxRecvs;
      for (uint8_t i = 0; i < r.count; ++i) {
        const MrHandle* mh = r.mhs[i];
        staged[i].rkey = staged[i].size > 0 && mh != nullptr ? mh->rkeys[member] : 0;
        std::array<uint8_t, net::kCtsEntryBytes> bytes{};
        std::memcpy(bytes.data(), &staged[i], bytes.size());
        ready.cts_entries.push_back(bytes);
      }
    }
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "{}", e.what());
  }
  st.epoch = start.epoch;
  // The members the sender offered that this side leaves out for their ports: it asks for them
  // back when their ports are (ask_for_rejoin).
  st.down_members = static_cast<uint8_t>(start.live_members & ~live & all_members_mask());
  if (st.down_members == 0) {
    st.rejoin_at_once(Clock::now());
  }
  if (!send_epoch_frame(ready)) {
    return fail(ncclRemoteError, "{}; recovery epoch {}: EpochReady could not be sent to {}",
                st.cause, st.epoch, peer_);
  }
  st.phase = EpochPhase::WaitingForGo;
  st.deadline = Clock::now() + std::chrono::seconds(st.setup.timeout_s);
  keep_checking();
  return ncclSuccess;
}

}  // namespace roce
