// The connecting side of connection setup, as a non-blocking state machine that connect()
// advances one step per call (NCCL calls again while the comm is NULL):
//
//   TcpConnect -> SendRequest -> AwaitReply -> SendReady -> Done
//
// Before the first step it creates the CQ, the data QPs (NCCL_IB_QPS_PER_CONNECTION) and the
// clear-to-send ring, because the ConnectRequest carries their numbers and address. AwaitReply
// validates the reply (nonce, QP count, class, geometry), then brings every QP to RTS against
// the receiver's QPs (the class is read back after RTR). A Reject from the receiver ends the
// attempt with its reason; a local failure after the socket is up sends one.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/connect/class_negotiation.h"
#include "core/connect/connection_setup.h"
#include "core/connect/qp_remaker.h"
#include "core/datapath/send_comm_setup.h"
#include "nccl_net/types.h"
#include "net/listen_handle.h"
#include "net/socket.h"

namespace roce {

class Comm;
class DeviceRuntime;

class SendConnector {
 public:
  // Creates the QPs and ring and starts the TCP connect. Returns nullptr after logging why
  // (*result set) when that fails.
  static std::unique_ptr<SendConnector> start(const CommDevices& devices, int comm_traffic_class,
                                              const net::ListenHandle& handle,
                                              ncclResult_t* result);

  ~SendConnector();  // out of line: the setup's verbs owners are complete only there

  // One step. ncclSuccess with *comm null: call again. ncclSuccess with *comm set: connected, the
  // new SendComm as the Comm NCCL gets for its handle. Anything else: failed (logged once); the
  // connector is spent.
  ncclResult_t step(Comm** comm);

  uint64_t nonce() const noexcept { return nonce_; }

 private:
  enum class State { TcpConnect, SendRequest, AwaitReply, SendReady, Done, Failed };
  enum class Step { Next, Wait, Failed };

  SendConnector(const CommDevices& devices, const net::ListenHandle& handle, ClassOffer offer,
                ConnectionSettings settings);
  void create_resources();
  Step on_tcp_connect();
  Step on_send_request();
  Step on_await_reply();
  Step on_send_ready();
  Step fail(ncclResult_t result, net::RejectReason reason, const std::string& message);

  std::shared_ptr<DeviceRuntime> device_;  // member 0
  CommDevices devices_;
  net::SocketAddress peer_address_;
  uint64_t nonce_;
  ClassOffer offer_;
  ConnectionSettings settings_;
  State state_ = State::TcpConnect;
  ncclResult_t result_ = ncclSuccess;

  std::optional<net::Connector> connector_;
  std::optional<net::FramedChannel> channel_;
  SendCommSetup setup_;
  std::vector<uint32_t> psns_;
  std::optional<ibv_ece> local_ece_;     // offered in the request (NCCL_IB_ECE_ENABLE)
  std::optional<ibv_ece> ece_in_force_;  // the reduced ECE set on every QP
  std::optional<net::EndpointInfo> peer_endpoint_;
  // How the comm's recovery epochs make QPs again (core/connect/qp_remaker.h).
  QpRemakerLinks remaker_links_;
  std::string peer_text_;
};

}  // namespace roce
