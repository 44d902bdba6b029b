// The sender's side of a recovery epoch (docs/design.md, "Recovery epochs"). The sender starts
// every epoch: on a failed completion of its own, on the receiver's EpochWanted, or when a member
// that was left out has its port back (a rejoin). It fences its QPs, waits for a port, makes new
// QPs on the members that are up and sends EpochStart; on the receiver's EpochReady it connects
// them, completes here what the receiver completed, posts the rest again (an "already complete"
// marker in each completed message's place, so that every QP carries its whole stride) and sends
// EpochGo. Until then every isend is held (no send-queue credit) and returns no request.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "core/datapath/send_comm.h"
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

ncclResult_t SendComm::on_failed_completion(int k, int got) noexcept {
  const ibv_wc wc = wcs_[static_cast<size_t>(k)];
  if (!can_recover(wc)) {
    return fail_completion(wc);
  }
  // The rest of the batch before the fence, which polls into the same array.
  for (int j = k + 1; j < got; ++j) {
    const ibv_wc& next = wcs_[static_cast<size_t>(j)];
    if (next.status == IBV_WC_SUCCESS) {
      if (ncclResult_t r = absorb_fenced(next); r != ncclSuccess) {
        return r;
      }
    }
  }
  try {
    return begin_epoch(completion_text(wc));
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "{}", e.what());
  }
}

ncclResult_t SendComm::begin_epoch(std::string cause) noexcept {
  RecoveryState& st = *recovery_;
  const auto now = Clock::now();
  if (st.phase == EpochPhase::Normal) {
    st.began = now;
    st.cause = std::move(cause);
    // An epoch in a row with no message completed since the last one: the path loses everything
    // although ports are up (a dead link beyond this host, a peer host that stopped).
    const uint64_t messages = telemetry_.stats().messages();
    st.fruitless = st.epoch > 0 && messages == st.messages_at_epoch ? st.fruitless + 1 : 0;
    if (st.fruitless >= kMaxFruitlessEpochs) {
      return fail(ncclRemoteError,
                  "{}; {} recovery epochs in a row ended without a message completing: the "
                  "path to the peer loses everything although the ports are ACTIVE (a link or "
                  "switch beyond this host, or the peer host); check the peer host and the path "
                  "(scripts/diagnose_roce.sh)",
                  st.cause, st.fruitless);
    }
  }
  st.phase = EpochPhase::WaitingForPort;
  st.deadline = now + std::chrono::seconds(st.setup.timeout_s);
  st.new_qps.clear();
  if (ncclResult_t r = fence_data_qps(); r != ncclSuccess) {
    return r;
  }
  // Every isend is held from here until on_ready(): start_send finds no credit.
  for (int q = 0; q < nqps_; ++q) {
    credits_[static_cast<size_t>(q)] = SendQueueCredits(0, 1);
  }
  ROCE_INFO(NCCL_NET,
            "send comm on {}: connection to {} begins recovery epoch {} (its data QPs fenced): {}",
            device().name(), peer_, st.epoch + 1, st.cause);
  // The next health check (at once: the caller's, or the next call's) steps the epoch.
  keep_checking();
  return ncclSuccess;
}

ncclResult_t SendComm::step_recovery() noexcept {
  try {
    return step_epoch();
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "recovery of the connection to {}: {}", peer_, e.what());
  }
}

ncclResult_t SendComm::step_epoch() {
  RecoveryState& st = *recovery_;
  if (peer_watch_ != nullptr && peer_watch_->state().has_epoch_frames()) {
    std::vector<net::EpochFrame> frames;
    try {
      frames = peer_watch_->take_epoch_frames();
    } catch (const std::exception& e) {
      return fail(ncclSystemError, "{}", e.what());
    }
    for (const net::EpochFrame& frame : frames) {
      if (const auto* wanted = std::get_if<net::EpochWanted>(&frame)) {
        if (!st.setup.enabled) {
          continue;  // recovery is off here: the receiver's failure ends the comm on its side
        }
        if (wanted->back_members != 0) {
          // A rejoin request: the receiver's ports are back, its QPs fine. Taken as the
          // sender's own rejoins are, at once if the receiver is sure to call (below), and with
          // the backoff started again (the receiver's port may flap).
          if (st.phase == EpochPhase::Normal && lanes_mask() != all_members_mask()) {
            st.peer_left_out = static_cast<uint8_t>(st.peer_left_out & ~wanted->back_members);
            st.peer_back = static_cast<uint8_t>(st.peer_back | wanted->back_members);
            st.rejoin_at_once(Clock::now());
          }
          continue;
        }
        if (st.phase == EpochPhase::Normal && wanted->epoch >= st.epoch) {
          const std::string cause =
              fmt::format("the receiver's QPs failed (it asks for an epoch after epoch {}{}{})",
                          wanted->epoch, wanted->down_members != 0 ? "; its ports down: " : "",
                          wanted->down_members != 0 ? members_text(wanted->down_members) : "");
          if (ncclResult_t r = begin_epoch(cause); r != ncclSuccess) {
            return r;
          }
        } else if (st.phase == EpochPhase::WaitingForReady && wanted->epoch >= st.epoch) {
          st.restart_wanted = true;
        }
      } else if (const auto* ready = std::get_if<net::EpochReady>(&frame)) {
        if (st.phase == EpochPhase::WaitingForReady && ready->epoch == st.epoch) {
          if (ncclResult_t r = on_ready(*ready); r != ncclSuccess) {
            return r;
          }
        }
        // An older epoch's answer: superseded.
      } else {
        return fail(ncclRemoteError, "{} sent {} to the sending end of the connection", peer_,
                    net::epoch_kind_name(net::kind_of(frame)));
      }
    }
  }
  const auto now = Clock::now();
  switch (st.phase) {
    case EpochPhase::WaitingForPort: {
      const uint8_t up = members_up_paced();
      if (up == 0) {
        if (now >= st.deadline) {
          return fail(ncclRemoteError,
                      "{}; no port of {} came back within NCCL_ROCE_RECOVERY_TIMEOUT_S ({} s): "
                      "the connection to {} is lost. Check the link (ibv_devinfo, the switch "
                      "port); a longer outage needs a larger NCCL_ROCE_RECOVERY_TIMEOUT_S",
                      st.cause, members_text(all_members_mask()), st.setup.timeout_s, peer_);
        }
        keep_checking();
        return ncclSuccess;
      }
      return start_epoch(up);
    }
    case EpochPhase::WaitingForReady:
      if (peer_watch_ != nullptr && peer_watch_->state().closed()) {
        return fail(ncclRemoteError, "{}; the receiver {} closed its comm during recovery epoch {}",
                    st.cause, peer_, st.epoch);
      }
      if (now >= st.deadline) {
        return fail(ncclRemoteError,
                    "{}; the receiver {} did not answer recovery epoch {} within "
                    "NCCL_ROCE_RECOVERY_TIMEOUT_S ({} s): its ports stayed down, or it is not "
                    "calling into NCCL",
                    st.cause, peer_, st.epoch, st.setup.timeout_s);
      }
      keep_checking();
      return ncclSuccess;
    case EpochPhase::Normal:
      // A rejoin: a member left out has its port back. Only when the receiver is sure to call
      // again: with sends in flight whose data all landed it may have nothing left to wait for
      // and make no call that would answer the epoch (docs/design.md, "A receiver NCCL does not
      // call"). With no send in flight, the next send waits for the answer and the receiver
      // calls for it; with a clear-to-send for the next message in the ring, the receiver
      // waits for that one. Members the receiver left out for its ports wait for its word
      // (peer_left_out).
      if (st.setup.enabled && lanes_mask() != all_members_mask() && now >= st.next_rejoin) {
        const auto back =
            static_cast<uint8_t>(members_up_paced() & ~lanes_mask() & ~st.peer_left_out);
        const bool receiver_will_call =
            oldest_pending(requests_) == nullptr || begun_cts_slot() != nullptr;
        if (back != 0 && !receiver_will_call) {
          keep_checking();  // due: at the first call where the receiver is sure to call again
        } else if (back != 0) {
          const auto theirs = static_cast<uint8_t>(back & st.peer_back);
          st.peer_back = 0;
          return begin_epoch(
              theirs != 0
                  ? fmt::format("the receiver's member(s) {} ACTIVE again (it asked): the member "
                                "rejoins the connection",
                                fmt::join(members_of_mask(theirs), ", "))
                  : fmt::format("{} ACTIVE again: the member rejoins the connection",
                                members_text(back)));
        }
      }
      return ncclSuccess;
    default:
      return ncclSuccess;
  }
}

ncclResult_t SendComm::start_epoch(uint8_t usable) noexcept {
  RecoveryState& st = *recovery_;
  net::EpochStart start;
  start.nonce = st.setup.nonce;
  start.epoch = st.epoch + 1;
  start.next_seq = next_seq_;
  start.live_members = usable;
  try {
    st.new_qps.clear();
    st.new_members.clear();
    st.new_psns.clear();
    for (const int m : members_of_mask(usable)) {
      if (m >= member_count_) {
        continue;
      }
      start.ring_rkeys.push_back(ring_.rkey(static_cast<size_t>(m)));
      for (int i = 0; i < qps_per_member_; ++i) {
        st.new_qps.push_back(st.setup.remaker.create(m));
        st.new_members.push_back(static_cast<uint8_t>(m));
        st.new_psns.push_back(random_epoch_psn());
        start.qps.push_back(
            {static_cast<uint8_t>(m), st.new_qps.back()->qp_num(), st.new_psns.back()});
      }
    }
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "{}; recovery epoch {}: new QPs: {}", st.cause, start.epoch,
                e.what());
  }
  st.epoch = start.epoch;
  st.down_members = static_cast<uint8_t>(all_members_mask() & ~usable);
  if (!send_epoch_frame(start)) {
    return fail(ncclRemoteError,
                "{}; recovery epoch {} could not be started: the peer watch's connection to {} "
                "is closed",
                st.cause, st.epoch, peer_);
  }
  st.phase = EpochPhase::WaitingForReady;
  st.deadline = Clock::now() + std::chrono::seconds(st.setup.timeout_s);
  keep_checking();
  return ncclSuccess;
}

void SendComm::complete_locally(uint64_t seq) noexcept {
  const uint16_t index = lead_of_seq_[cts_slot_of(seq)];
  if (!requests_.in_use(index)) {
    return;
  }
  SendRequest& lead = requests_[index];
  if (lead.seq != seq || lead.state != RequestState::Pending) {
    return;  // its completion was seen before the fence
  }
  for (size_t i = 0; i < lead.group_count; ++i) {
    SendRequest& r = requests_[lead.members[i]];
    r.state = RequestState::Done;
    r.event.stop();
    count_done(r);
  }
}

ncclResult_t SendComm::on_ready(const net::EpochReady& ready) noexcept {
  RecoveryState& st = *recovery_;
  // What the receiver may answer: the sequence this side sent, a subset of its members, a QP for
  // each of this side's on those members, entries of whole receives.
  std::vector<std::unique_ptr<verbs::QueuePair>> kept;
  std::vector<uint8_t> kept_members;
  std::vector<uint32_t> kept_psns;
  for (size_t i = 0; i < st.new_qps.size(); ++i) {
    if (((ready.live_members >> st.new_members[i]) & 1U) != 0) {
      kept.push_back(std::move(st.new_qps[i]));
      kept_members.push_back(st.new_members[i]);
      kept_psns.push_back(st.new_psns[i]);
    }
  }
  st.new_qps.clear();
  if (ready.next_seq != next_seq_ || kept.empty() || ready.qps.size() != kept.size() ||
      (ready.live_members & ~(all_members_mask() & ~st.down_members)) != 0) {
    return fail(ncclRemoteError,
                "{}; the receiver's answer to recovery epoch {} does not fit its start (next "
                "sequence {} for {}, {} QPs for {}, members 0x{:x}); the peer is not a "
                "compatible RoCE plugin",
                st.cause, st.epoch, ready.next_seq, next_seq_, ready.qps.size(), kept.size(),
                ready.live_members);
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    if (ready.qps[i].member != kept_members[i]) {
      return fail(ncclRemoteError,
                  "recovery epoch {}: the receiver's QP {} is on member {}, not {}", st.epoch, i,
                  ready.qps[i].member, kept_members[i]);
    }
  }
  // The receiver's entries, whole receives in sequence order.
  std::vector<CtsEntry> entries(ready.cts_entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    std::memcpy(&entries[i], ready.cts_entries[i].data(), sizeof(CtsEntry));
  }
  std::array<int, kCtsRingSlots> first_entry{};
  first_entry.fill(-1);
  for (size_t i = 0; i < entries.size();) {
    const CtsEntry& e = entries[i];
    if (e.count < 1 || e.count > kMaxRecvs || i + e.count > entries.size() ||
        e.seq < ready.low_seq || e.seq >= next_seq_ + kCtsRingSlots) {
      return fail(ncclRemoteError,
                  "recovery epoch {}: clear-to-send entry {} from {} is malformed (sequence {}, "
                  "count {})",
                  st.epoch, i, peer_, e.seq, e.count);
    }
    first_entry[cts_slot_of(e.seq)] = static_cast<int>(i);
    i += e.count;
  }
  try {
    for (size_t i = 0; i < kept.size(); ++i) {
      st.setup.remaker.connect(*kept[i], kept_members[i], ready.qps[i].qpn, ready.qps[i].psn,
                               kept_psns[i]);
    }
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "{}; recovery epoch {}: connecting the new QPs: {}", st.cause,
                st.epoch, e.what());
  }
  try {
    install_qps(std::move(kept), kept_members);
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "{}; recovery epoch {}: {}", st.cause, st.epoch, e.what());
  }
  single_qp_messages_ = !split_data_ || nqps_ == 1;
  for (int q = 0; q < nqps_; ++q) {
    credits_[static_cast<size_t>(q)] =
        SendQueueCredits(qp_ptrs_[static_cast<size_t>(q)]->capabilities().max_send_wr - 1, 1);
  }
  // Receives the sender has not reached: their entries go into the ring (the writes of the
  // failed QPs may have been lost, and the keys may now be another member's); a receive being
  // matched takes its new keys.
  auto* ring = const_cast<CtsEntry*>(ring_entries_);
  for (size_t i = 0; i < entries.size(); i += entries[i].count) {
    const uint64_t seq = entries[i].seq;
    if (seq < next_seq_) {
      continue;
    }
    CtsEntry* slot = ring + size_t{cts_slot_of(seq)} * kMaxRecvs;
    for (size_t j = 0; j < entries[i].count; ++j) {
      CtsEntry e = entries[i + j];
      e.seq = 0;
      std::memcpy(&slot[j], &e, sizeof e);  // all but the sequence, which says "ready" last
      __atomic_store_n(&slot[j].seq, seq, __ATOMIC_RELEASE);
    }
    if (seq == next_seq_ && pending_.loaded() && entries[i].count == pending_.count()) {
      pending_.refresh(&entries[i]);
    }
  }
  // Messages below the receiver's first incomplete one whose completion this side lost with the
  // old QPs (their data landed; the ACK did not come back): done here, with no marker, since the
  // new QPs start counting at `low`.
  const uint64_t oldest = next_seq_ > kCtsRingSlots ? next_seq_ - kCtsRingSlots : 1;
  for (uint64_t seq = oldest; seq < ready.low_seq; ++seq) {
    complete_locally(seq);
  }
  // The messages in flight, in order: completed ones are done here and leave a marker, the
  // others go again, whole, through the keys of their new member.
  uint64_t resent = 0;
  uint64_t marked = 0;
  for (uint64_t seq = ready.low_seq; seq < next_seq_; ++seq) {
    const auto [q_begin, q_end] = qps_of_message(seq);
    if (ready.complete(seq)) {
      complete_locally(seq);
      for (int q = q_begin; q < q_end; ++q) {
        if (ncclResult_t r = post_marker(q); r != ncclSuccess) {
          return r;
        }
      }
      ++marked;
      continue;
    }
    const uint16_t index = lead_of_seq_[cts_slot_of(seq)];
    const int at = first_entry[cts_slot_of(seq)];
    if (!requests_.in_use(index) || requests_[index].seq != seq ||
        requests_[index].state != RequestState::Pending || at < 0 ||
        entries[static_cast<size_t>(at)].seq != seq ||
        entries[static_cast<size_t>(at)].count != requests_[index].group_count) {
      return fail(ncclRemoteError,
                  "recovery epoch {}: the receiver lacks message {}, which this side {}; the two "
                  "ends disagree on what arrived",
                  st.epoch, seq,
                  at < 0 ? "has no clear-to-send entry for" : "completed or cannot match");
    }
    SendRequest& lead = requests_[index];
    rebind_buffers(lead, member_of_qp(q_begin));
    if (ncclResult_t r = post_message(seq, lead, &entries[static_cast<size_t>(at)], true);
        r != ncclSuccess) {
      return r;
    }
    ++resent;
  }
  net::EpochGo go;
  go.nonce = st.setup.nonce;
  go.epoch = st.epoch;
  if (!send_epoch_frame(go)) {
    return fail(ncclRemoteError, "{}; recovery epoch {}: EpochGo could not be sent to {}", st.cause,
                st.epoch, peer_);
  }
  st.phase = EpochPhase::Normal;
  // What the sender offered and the receiver left out: its ports (it asks for them back).
  st.peer_left_out =
      static_cast<uint8_t>(all_members_mask() & ~st.down_members & ~ready.live_members);
  if (lanes_mask() != all_members_mask()) {
    st.delay_next_rejoin(Clock::now());
  } else {
    st.rejoin_at_once(Clock::now());
  }
  report_recovered(lanes_mask() != all_members_mask() ? "a member left out" : "all members", resent,
                   marked);
  st.messages_at_epoch = telemetry_.stats().messages();
  if (st.restart_wanted) {
    st.restart_wanted = false;
    return begin_epoch("the receiver asked for another epoch while this one was agreed");
  }
  return ncclSuccess;
}

}  // namespace roce
