// A listener: one TCP socket bound to the device's GID address on an ephemeral port, the random
// nonce its handle carries, and the connections accepted from it that are still being set up.
// Every accept() takes what the kernel has queued and advances every pending connection, so a
// slow, silent or hostile connection never holds up the real one. Pending connections are
// bounded: when too many wait for a first valid message, the oldest of those is dropped; and
// when too many have sent a valid request (so hold QPs and buffers) but not their ready, the one
// that has waited longest is (a peer that knows the nonce and never finishes, issue 49).
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "core/comm.h"
#include "core/connect/class_negotiation.h"
#include "core/connect/connection_setup.h"
#include "core/datapath/comm_setup.h"
#include "net/socket.h"

namespace roce {

class PendingAccept;
class RecvComm;

class ListenComm final : public Comm {
 public:
  static constexpr size_t kMaxPending = 128;
  // Handshakes past their request that may hold resources at once. NCCL accepts one connection
  // per listener, and a real sender answers the reply within a round trip, so it is never the
  // stalest of these; a peer that holds the nonce and stalls costs at most this many handshakes'
  // QPs and buffers, not 128.
  static constexpr size_t kMaxHoldingResources = 8;
  static constexpr int kMaxAcceptsPerCall = 64;
  static constexpr uint64_t kMaxLoggedRefusals = 16;

  // devices: the port, or the virtual NIC's members, that accepted comms run on.
  ListenComm(CommDevices devices, net::Listener listener, uint64_t nonce, ClassOffer offer);
  ~ListenComm() override;

  // ncclSuccess with *comm null: nothing ready yet; call again. Set: the new RecvComm, as the
  // Comm NCCL gets for its handle.
  ncclResult_t accept(Comm** comm);

  const net::SocketAddress& address() const noexcept { return listener_.address(); }
  uint64_t nonce() const noexcept { return nonce_; }

 private:
  void take_new_connections();
  void note_drop(const PendingAccept& pending, const std::string& why);
  // Drops the oldest connection that has not sent its request yet; false if there is none.
  bool evict_oldest_silent(const char* why);
  // Drops the connection accepted longest ago, whatever its state (pending_ is full and none is
  // silent); false if there is none.
  bool evict_oldest(const char* why);
  // Drops the handshake holding resources whose request came first, other than pending_[keep]
  // (the one that just made its resources); pending_ entries may be null (dropped this call).
  void evict_stalest_holding(size_t keep);
  // Returns the heap's free memory to the system (malloc_trim) after handshakes that held
  // resources were dropped.
  static void give_memory_back() noexcept;

  CommDevices devices_;
  net::Listener listener_;
  uint64_t nonce_;
  ClassOffer offer_;
  ConnectionSettings settings_;
  std::vector<std::unique_ptr<PendingAccept>> pending_;
  std::deque<std::unique_ptr<RecvComm>> ready_;
  uint64_t dropped_ = 0;
  bool descriptors_warned_ = false;
  bool released_resources_ = false;  // this accept() pass dropped a handshake holding resources
};

}  // namespace roce
