// The listener: see listen_comm.h.
#include "core/connect/listen_comm.h"

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <optional>

#include "core/connect/pending_accept.h"
#include "core/datapath/recv_comm.h"
#include "util/log.h"

namespace roce {

ListenComm::ListenComm(CommDevices devices, net::Listener listener, uint64_t nonce,
                       ClassOffer offer)
    : Comm(CommKind::Listen, devices.members.front()),
      devices_(std::move(devices)),
      listener_(std::move(listener)),
      nonce_(nonce),
      offer_(std::move(offer)),
      settings_(ConnectionSettings::from_config()) {}

ListenComm::~ListenComm() {
  if (dropped_ > kMaxLoggedRefusals) {
    ROCE_INFO(NCCL_NET, "listener on {} ({}): {} incoming connections were refused or dropped",
              device().name(), listener_.address().to_string(), dropped_);
  }
  const bool held = std::any_of(pending_.begin(), pending_.end(),
                                [](const auto& p) { return p->holds_resources(); });
  pending_.clear();
  if (held) {
    give_memory_back();
  }
}

void ListenComm::give_memory_back() noexcept {
  // A handshake's QPs, CQ and registered buffers are many allocations of the verbs provider's
  // (vroce's QP rings among them, about 0.4 MiB per QP); once freed they stay in the C
  // library's heap, out of reach of the rest of the process but still resident, so a stalled
  // handshake storm would leave the listener's RSS at its peak (issue 49: 2.37 GB that stayed).
  // Only after handshakes that held resources went, so at most once per accept() call.
  static_cast<void>(malloc_trim(0));
}

void ListenComm::note_drop(const PendingAccept& pending, const std::string& why) {
  ++dropped_;
  if (dropped_ <= kMaxLoggedRefusals) {
    ROCE_WARN(NCCL_NET, "listener on {} ({}): connection from {}: {}; still listening",
              device().name(), listener_.address().to_string(), pending.peer_text(), why);
    if (dropped_ == kMaxLoggedRefusals) {
      ROCE_WARN(NCCL_NET, "listener on {}: further refused connections are counted, not logged",
                device().name());
    }
  }
}

bool ListenComm::evict_oldest_silent(const char* why) {
  auto victim = std::find_if(pending_.begin(), pending_.end(),
                             [](const auto& p) { return p->awaiting_request(); });
  if (victim == pending_.end()) {
    return false;
  }
  note_drop(**victim, why);
  pending_.erase(victim);
  return true;
}

bool ListenComm::evict_oldest(const char* why) {
  auto victim = std::min_element(
      pending_.begin(), pending_.end(),
      [](const auto& a, const auto& b) { return a->accepted_at() < b->accepted_at(); });
  if (victim == pending_.end()) {
    return false;
  }
  note_drop(**victim, why);
  pending_.erase(victim);
  return true;
}

void ListenComm::evict_stalest_holding(size_t keep) {
  size_t victim = pending_.size();
  for (size_t j = 0; j < pending_.size(); ++j) {
    if (j == keep || pending_[j] == nullptr || !pending_[j]->holds_resources()) {
      continue;
    }
    if (victim == pending_.size() ||
        pending_[j]->requested_at() < pending_[victim]->requested_at()) {
      victim = j;
    }
  }
  if (victim == pending_.size()) {
    return;
  }
  released_resources_ = true;
  note_drop(*pending_[victim],
            fmt::format("evicted: {} handshakes past their request were waiting for their "
                        "sender's ready, and this one longest (a peer that holds the listen "
                        "handle but does not finish, or a sender stalled that long)",
                        kMaxHoldingResources + 1));
  pending_[victim].reset();  // its QPs, CQ, buffers and socket go now
}

void ListenComm::take_new_connections() {
  for (int i = 0; i < kMaxAcceptsPerCall; ++i) {
    net::Socket socket;
    net::SocketError error;
    const net::IoStatus status = listener_.accept(&socket, &error);
    if (status == net::IoStatus::InProgress) {
      return;
    }
    if (status == net::IoStatus::Error) {
      if (error.kind == net::SocketErrorKind::OutOfDescriptors) {
        // Connections that never sent a request may be what holds the descriptors (a storm of
        // half-open connections): give the oldest one up and accept again. With none to give,
        // the connection stays queued for a later call; the peer's connect timeout bounds the
        // wait. Failing the listener instead would let such a storm end a job.
        if (evict_oldest_silent("evicted: out of file descriptors")) {
          continue;
        }
        if (!descriptors_warned_) {
          descriptors_warned_ = true;
          ROCE_WARN(NCCL_NET, "listener on {}: {}; connections wait in the backlog meanwhile",
                    device().name(), error.message);
        }
        return;
      }
      fail(ncclSystemError, "accepting on {}: {}", listener_.address().to_string(), error.message);
      return;
    }
    if (pending_.size() >= kMaxPending) {
      // The legitimate sender sends its request as soon as it connects, so it is never the one
      // waiting longest. With none silent, the oldest of all goes (a handshake stuck between
      // states, or refusing): a full list of stalled handshakes must not shut out new
      // connections, the real one among them.
      if (!evict_oldest_silent("evicted: too many connections waiting for a first message") &&
          !evict_oldest("evicted: too many connections pending, this one the oldest")) {
        continue;
      }
    }
    pending_.push_back(
        std::make_unique<PendingAccept>(devices_, std::move(socket), nonce_, offer_, settings_));
  }
}

ncclResult_t ListenComm::accept(Comm** comm) {
  *comm = nullptr;
  if (failed()) {
    return failure();
  }
  take_new_connections();
  // Entries that finish, fail or are evicted during the pass become null and are removed after
  // it, so that an eviction never shifts the entry being stepped.
  size_t holding = static_cast<size_t>(std::count_if(
      pending_.begin(), pending_.end(), [](const auto& p) { return p->holds_resources(); }));
  std::optional<ncclResult_t> listener_failed;
  for (size_t i = 0; i < pending_.size() && !listener_failed; ++i) {
    if (pending_[i] == nullptr) {
      continue;
    }
    PendingAccept& p = *pending_[i];
    const bool held = p.holds_resources();
    RecvComm* connected = nullptr;
    switch (p.step(&connected)) {
      case PendingAccept::Status::Waiting:
        // A request just made its resources: past the bound, the stalest holder goes before
        // the next request can make more.
        if (!held && p.holds_resources() && ++holding > kMaxHoldingResources) {
          evict_stalest_holding(i);
          --holding;
        }
        break;
      case PendingAccept::Status::Connected:
        holding -= held ? 1 : 0;
        ready_.emplace_back(connected);
        pending_[i].reset();
        break;
      case PendingAccept::Status::Dropped:
        holding -= held ? 1 : 0;
        released_resources_ = released_resources_ || held;
        if (auto result = p.listener_failure()) {
          // The peer this listener exists for cannot connect (see listener_failure()).
          listener_failed = fail(
              *result,
              "listener on {}: connection from {}: {}; the two sides must agree on the traffic "
              "class and service level (NCCL_ROCE_TC, NCCL_ROCE_DSCP, NCCL_IB_TC, NCCL_IB_SL, or "
              "the communicator's trafficClass)",
              device().name(), p.peer_text(), p.drop_reason());
          break;
        }
        note_drop(p, p.drop_reason());
        pending_[i].reset();
        break;
    }
  }
  std::erase(pending_, nullptr);
  if (released_resources_) {
    released_resources_ = false;
    give_memory_back();
  }
  if (listener_failed) {
    return *listener_failed;
  }
  if (!ready_.empty()) {
    *comm = ready_.front().release();
    ready_.pop_front();
  }
  return ncclSuccess;
}

}  // namespace roce
