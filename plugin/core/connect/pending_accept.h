// One incoming connection on a listener, as a non-blocking state machine that accept() advances
// (the listener advances every pending connection on each call, independently):
//
//   AwaitRequest -> SendReply -> AwaitReady -> Done
//        \-> Rejecting (a bad request: send a Reject with the reason, then drop)
//
// The request is read under a deadline and a frame-size bound, validated (nonce first, then
// every field and the protocol geometry and class), and only then are QPs created and brought to
// RTS against the sender's QPs. A refused connection is logged once and costs nothing after.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/connect/class_negotiation.h"
#include "core/connect/connection_setup.h"
#include "core/connect/qp_remaker.h"
#include "core/datapath/recv_comm_setup.h"
#include "nccl_net/types.h"
#include "net/socket.h"

namespace roce {

class DeviceRuntime;
class RecvComm;

class PendingAccept {
 public:
  PendingAccept(const CommDevices& devices, net::Socket socket, uint64_t nonce, ClassOffer offer,
                const ConnectionSettings& settings);
  ~PendingAccept();  // out of line: the setup's verbs owners are complete only there

  enum class Status { Waiting, Connected, Dropped };
  // One step. Connected: *comm holds the new RecvComm. Dropped: refused or failed (logged).
  Status step(RecvComm** comm);

  // Why the connection was dropped (set with Status::Dropped), for the listener to log.
  const std::string& drop_reason() const noexcept { return drop_reason_; }
  const std::string& peer_text() const noexcept { return peer_text_; }
  // Set with Status::Dropped when the drop ends the listener too: the real peer (its nonce
  // checked) and this side disagree on the traffic class or service level, refused by either
  // side. NCCL's listener waits for exactly that peer, so accepting on would wait forever; accept
  // returns this error instead (ncclInvalidUsage: we refused; ncclRemoteError: the sender did).
  std::optional<ncclResult_t> listener_failure() const noexcept { return listener_failure_; }

  // Still waiting for a valid request: the connection to evict first when too many are pending.
  bool awaiting_request() const noexcept { return state_ == State::AwaitRequest; }
  net::Clock::time_point accepted_at() const noexcept { return accepted_at_; }
  // Past a valid request (its nonce checked), holding the QPs, CQ and buffers made for it while
  // the reply goes out and the sender's ready is awaited: what a peer that holds the nonce but
  // never finishes makes the listener spend (issue 49), so the listener bounds how many do.
  bool holds_resources() const noexcept {
    return state_ == State::SendReply || state_ == State::AwaitReady;
  }
  // When the request was accepted and the resources made: the stalest is evicted first.
  net::Clock::time_point requested_at() const noexcept { return requested_at_; }

 private:
  enum class State { AwaitRequest, SendReply, AwaitReady, Rejecting, Done, Dropped };
  enum class Step { Next, Wait, Drop };

  Step on_await_request();
  Step on_send_reply();
  Step on_await_ready();
  Step on_rejecting();
  Step reject(net::RejectReason reason, const std::string& message);
  Step drop(const std::string& message);
  void create_resources(const net::ConnectRequest& request, const ClassAgreement& agreed);

  std::shared_ptr<DeviceRuntime> device_;  // member 0
  CommDevices devices_;
  net::FramedChannel channel_;
  uint64_t nonce_;
  ClassOffer offer_;
  ConnectionSettings settings_;
  net::Clock::time_point accepted_at_;
  net::Clock::time_point requested_at_{};
  State state_ = State::AwaitRequest;
  std::string peer_text_;
  std::string drop_reason_;
  std::optional<ncclResult_t> listener_failure_;

  RecvCommSetup setup_;
  std::vector<uint32_t> psns_;
  std::optional<ibv_ece> ece_in_force_;
  // How the comm's recovery epochs make QPs again, and the peer's version, which says whether it
  // speaks them (core/connect/qp_remaker.h).
  QpRemakerLinks remaker_links_;
  uint32_t peer_version_ = 0;
  bool authenticated_ =
      false;  // the request carried the listen nonce  // the sender's ECE as this device reduced it
};

}  // namespace roce
