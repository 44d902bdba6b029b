// The listener: see listen_comm.h.
#include "core/connect/listen_comm.h"

#include <algorithm>

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
      // waiting longest. If every slot is mid-handshake, the new socket closes at once.
      if (!evict_oldest_silent("evicted: too many connections waiting for a first message")) {
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
  for (size_t i = 0; i < pending_.size();) {
    RecvComm* connected = nullptr;
    switch (pending_[i]->step(&connected)) {
      case PendingAccept::Status::Waiting:
        ++i;
        break;
      case PendingAccept::Status::Connected:
        ready_.emplace_back(connected);
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      case PendingAccept::Status::Dropped:
        if (auto result = pending_[i]->listener_failure()) {
          // The peer this listener exists for cannot connect (see listener_failure()).
          return fail(*result,
                      "listener on {}: connection from {}: {}; the two sides must agree on the "
                      "traffic class and service level (NCCL_ROCE_TC, NCCL_ROCE_DSCP, NCCL_IB_TC, "
                      "NCCL_IB_SL, or the communicator's trafficClass)",
                      device().name(), pending_[i]->peer_text(), pending_[i]->drop_reason());
        }
        note_drop(*pending_[i], pending_[i]->drop_reason());
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
    }
  }
  if (!ready_.empty()) {
    *comm = ready_.front().release();
    ready_.pop_front();
  }
  return ncclSuccess;
}

}  // namespace roce
