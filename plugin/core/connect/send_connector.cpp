// The connecting side's state machine: see send_connector.h.
#include "core/connect/send_connector.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/connect/handshake_checks.h"
#include "core/connect/qp_setup.h"
#include "core/datapath/send_comm.h"
#include "core/device/device_runtime.h"
#include "util/log.h"
#include "verbs/error.h"

namespace roce {
namespace {

// A refusal before any QP exists still reaches the listener, so the receiver's accept ends too
// instead of waiting for a request (net_ib parity F12): connect, send a Reject carrying the
// handle's nonce, close. Best effort, on the error path only, bounded by the handshake timeout
// (at most 5 s: the connect fails either way).
void tell_listener_refused(const net::ListenHandle& handle, const std::string& text,
                           std::chrono::milliseconds timeout) {
  const auto deadline = net::Clock::now() + timeout;
  auto connector = net::Connector::start(handle.address, deadline);
  if (!connector) {
    return;
  }
  net::Socket socket;
  net::SocketError socket_error;
  net::IoStatus status = net::IoStatus::InProgress;
  while ((status = connector->progress(&socket, &socket_error)) == net::IoStatus::InProgress) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (status != net::IoStatus::Done) {
    return;
  }
  net::FramedChannel channel(std::move(socket), deadline, kMaxHandshakeFrame);
  send_reject_best_effort(channel, net::RejectReason::TrafficClassMismatch, text, handle.nonce);
  while (channel.flush() == net::IoStatus::InProgress) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

std::unique_ptr<SendConnector> SendConnector::start(const CommDevices& devices,
                                                    int comm_traffic_class,
                                                    const net::ListenHandle& handle,
                                                    ncclResult_t* result) {
  const std::shared_ptr<DeviceRuntime>& device = devices.members.front();
  Result<ClassOffer> offer = local_class_offer(comm_traffic_class);
  if (offer) {
    // What leaves this host is what the override says, when one is set.
    ClassAgreement mine{offer->traffic_class, offer->service_level, offer->configured};
    auto applied =
        apply_host_override(mine, device->global_class_override(), device->override_file());
    if (applied) {
      offer->traffic_class = applied->traffic_class;
    } else {
      offer = failure(applied.error());
    }
  }
  if (!offer) {
    const std::string& error = offer.error();
    ROCE_WARN(NCCL_NET, "connect on {} to {}: {}", device->name(), handle.address.to_string(),
              error);
    tell_listener_refused(handle, error,
                          std::min(ConnectionSettings::from_config().handshake_timeout,
                                   std::chrono::milliseconds(5000)));
    *result = ncclInvalidUsage;
    return nullptr;
  }
  std::unique_ptr<SendConnector> connector(
      new SendConnector(devices, handle, *offer, ConnectionSettings::from_config()));
  try {
    connector->create_resources();
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    ROCE_WARN(NCCL_NET, "connect on {} to {}: {}", device->name(), handle.address.to_string(),
              e.what());
    *result = ncclSystemError;
    return nullptr;
  }
  const auto deadline = net::Clock::now() + connector->settings_.handshake_timeout;
  auto started = net::Connector::start(handle.address, deadline);
  if (!started) {
    ROCE_WARN(NCCL_NET, "connect on {} to {}: {}", device->name(), handle.address.to_string(),
              started.error());
    *result = ncclSystemError;
    return nullptr;
  }
  connector->connector_ = std::move(*started);
  *result = ncclSuccess;
  return connector;
}

SendConnector::SendConnector(const CommDevices& devices, const net::ListenHandle& handle,
                             ClassOffer offer, ConnectionSettings settings)
    : device_(devices.members.front()),
      devices_(devices),
      peer_address_(handle.address),
      nonce_(handle.nonce),
      offer_(std::move(offer)),
      settings_(settings),
      peer_text_(handle.address.to_string()) {}

void SendConnector::create_resources() {
  // NCCL_IB_QPS_PER_CONNECTION QPs on each member of a virtual NIC, member by member, each
  // member's on a CQ of its own (a QP's CQ belongs to its device).
  const int per_member = settings_.qps_per_connection;
  const auto members = static_cast<int>(devices_.members.size());
  if (per_member * members > static_cast<int>(net::kMaxQpsPerConnection)) {
    throw verbs::VerbsError(
        fmt::format("{} QPs per connection on each of {} members is more than the {} a "
                    "connection holds; lower NCCL_IB_QPS_PER_CONNECTION",
                    per_member, members, net::kMaxQpsPerConnection),
        EINVAL);
  }
  setup_.members = devices_.members;
  setup_.device_id = devices_.id;
  remaker_links_.members = devices_.members;
  remaker_links_.recv_depth = 1;
  remaker_links_.inline_data = settings_.use_inline;
  for (int m = 0; m < members; ++m) {
    DeviceRuntime& member = *devices_.members[static_cast<size_t>(m)];
    std::shared_ptr<verbs::CompletionQueue> cq = create_comm_cq(member, per_member);
    remaker_links_.cqs.push_back(cq);
    for (int q = 0; q < per_member; ++q) {
      // The sender's QPs receive nothing (the receiver only writes into the ring).
      setup_.qps.push_back(create_data_qp(member, cq, 1, settings_.use_inline));
      psns_.push_back(random_psn());
    }
    if (m == 0) {
      setup_.cq = std::move(cq);
    } else {
      setup_.more_cqs.push_back(std::move(cq));
    }
  }
  // The receiver writes the clear-to-send ring through its QPs on member 0, which reach ours on
  // member 0 (after a recovery epoch that left member 0 out: on the first member in use, whose
  // key EpochStart carries); the sizes of a multi-receive leave through the member that carries
  // it.
  setup_.ring = RegisteredBuffer(device_->pd(), kCtsRingBytes,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  setup_.sizes_staging =
      RegisteredBuffer(device_->pd(), size_t{kMaxSendRequests} * kMaxRecvs * sizeof(int32_t),
                       IBV_ACCESS_LOCAL_WRITE);
  for (int m = 1; m < members; ++m) {
    const auto& pd = devices_.members[static_cast<size_t>(m)]->pd();
    setup_.ring.register_also(pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    setup_.sizes_staging.register_also(pd, IBV_ACCESS_LOCAL_WRITE);
  }
  setup_.traffic_class = offer_.traffic_class;
  setup_.split_data = settings_.split_data;
  if (settings_.adaptive_routing) {
    setup_.ar_threshold = settings_.ar_threshold;
  }
  if (settings_.ece_enable) {
    local_ece_ = setup_.qps.front()->query_ece();  // as net_ib: what this device supports
  }
}

SendConnector::~SendConnector() = default;

ncclResult_t SendConnector::step(Comm** comm) {
  *comm = nullptr;
  for (;;) {
    Step s = Step::Wait;
    switch (state_) {
      case State::TcpConnect:
        s = on_tcp_connect();
        break;
      case State::SendRequest:
        s = on_send_request();
        break;
      case State::AwaitReply:
        s = on_await_reply();
        break;
      case State::SendReady:
        s = on_send_ready();
        break;
      case State::Done: {
        setup_.peer = peer_text_;
        setup_.peer_watch = watch_peer(*channel_, nonce_, settings_, *device_, peer_text_);
        setup_.recovery =
            make_recovery_setup(settings_, peer_endpoint_ ? peer_endpoint_->plugin_version : 0,
                                setup_.peer_watch != nullptr, nonce_, std::move(remaker_links_));
        auto* connected = new SendComm(device_, std::move(setup_));
        *comm = connected;
        ROCE_INFO(NCCL_NET, "connected on {} to {}: {} qp{}, tc {}, sl {}, inline {}, {}{}{}",
                  devices_name(devices_.members), peer_text_, connected->qp_count(),
                  connected->qp_count() == 1 ? "" : "s", connected->traffic_class(),
                  offer_.service_level, connected->max_inline(), describe_ece(ece_in_force_),
                  settings_.ece_enable ? "" : " (NCCL_IB_ECE_ENABLE=0)",
                  settings_.adaptive_routing
                      ? fmt::format(", adaptive routing above {} bytes", settings_.ar_threshold)
                      : "");
        return ncclSuccess;
      }
      case State::Failed:
        return result_;
    }
    if (s == Step::Wait) {
      return ncclSuccess;
    }
    if (s == Step::Failed) {
      return result_;
    }
  }
}

SendConnector::Step SendConnector::fail(ncclResult_t result, net::RejectReason reason,
                                        const std::string& message) {
  if (state_ != State::Failed) {
    ROCE_WARN(NCCL_NET, "connect on {} to {}: {}", device_->name(), peer_text_, message);
    if (channel_ && reason != net::RejectReason::None) {
      send_reject_best_effort(*channel_, reason, message, nonce_);
    }
    state_ = State::Failed;
    result_ = result;
  }
  return Step::Failed;
}

SendConnector::Step SendConnector::on_tcp_connect() {
  net::Socket socket;
  net::SocketError error;
  switch (connector_->progress(&socket, &error)) {
    case net::IoStatus::InProgress:
      return Step::Wait;
    case net::IoStatus::Error:
      return fail(ncclSystemError, net::RejectReason::None, error.message);
    case net::IoStatus::Done:
      break;
  }
  channel_.emplace(std::move(socket), net::Clock::now() + settings_.handshake_timeout,
                   kMaxHandshakeFrame);
  net::ConnectRequest request;
  request.nonce = nonce_;
  request.endpoint = local_endpoint(devices_.members, offer_.traffic_class, offer_.service_level,
                                    setup_.qps, psns_);
  request.cts_ring = cts_ring_geometry(setup_.ring.addr(), setup_.ring.rkey());
  request.max_recvs = kMaxRecvs;
  request.split_data = settings_.split_data ? 1 : 0;
  request.ece = ece_to_wire(local_ece_);
  if (const Status queued = queue_message(*channel_, request); !queued) {
    return fail(ncclInternalError, net::RejectReason::None,
                "cannot send the connect request: " + queued.error());
  }
  state_ = State::SendRequest;
  return Step::Next;
}

SendConnector::Step SendConnector::on_send_request() {
  switch (channel_->flush()) {
    case net::IoStatus::InProgress:
      return Step::Wait;
    case net::IoStatus::Error:
      return fail(ncclSystemError, net::RejectReason::None, channel_->error().message);
    case net::IoStatus::Done:
      state_ = State::AwaitReply;
      return Step::Next;
  }
  return Step::Wait;
}

SendConnector::Step SendConnector::on_await_reply() {
  std::vector<uint8_t> message;
  switch (channel_->receive(&message)) {
    case net::IoStatus::InProgress:
      return Step::Wait;
    case net::IoStatus::Error:
      return fail(ncclSystemError, net::RejectReason::None,
                  "waiting for the receiver's reply: " + channel_->error().message);
    case net::IoStatus::Done:
      break;
  }
  net::DecodeExpectations expect;
  expect.nonce = nonce_;
  net::DecodeResult decoded = net::decode_message(message, expect);
  if (!decoded.ok()) {
    return fail(ncclRemoteError, decoded.reason, "invalid reply: " + decoded.detail);
  }
  if (const auto* reject = std::get_if<net::Reject>(&*decoded.message)) {
    return fail(ncclRemoteError, net::RejectReason::None,
                fmt::format("the receiver refused the connection ({}): {}",
                            net::reject_reason_name(reject->reason), reject->text));
  }
  const auto* reply = std::get_if<net::ConnectReply>(&*decoded.message);
  if (reply == nullptr) {
    return fail(ncclRemoteError, net::RejectReason::UnknownKind,
                fmt::format("expected a connect reply, got {}",
                            net::message_kind_name(net::kind_of(*decoded.message))));
  }
  peer_endpoint_ = reply->endpoint;
  peer_text_ = describe_peer(peer_address_, &*peer_endpoint_);
  if (const Status checked = check_connect_reply(*reply, setup_.qps.size()); !checked) {
    return fail(ncclRemoteError, net::RejectReason::QpCountMismatch, checked.error());
  }
  const size_t members = devices_.members.size();
  if (reply->endpoint.member_count != members) {
    return fail(ncclInvalidUsage, net::RejectReason::MemberCountMismatch,
                fmt::format("this side's NIC has {} member(s), the receiver's {}: fuse NICs alike "
                            "on every node (NCCL_NET_MERGE_LEVEL, NCCL_IB_MERGE_NICS)",
                            members, reply->endpoint.member_count));
  }
  auto agreed = sender_accept(offer_, reply->endpoint.traffic_class, reply->endpoint.service_level);
  if (!agreed) {
    return fail(ncclInvalidUsage, net::RejectReason::TrafficClassMismatch, agreed.error());
  }
  const size_t per_member = setup_.qps.size() / members;
  // The receiver's device reduced our ECE; set that on our QPs (neither side supporting: none).
  const std::optional<ibv_ece> reduced = local_ece_ ? ece_from_wire(reply->ece) : std::nullopt;
  bool ece_set = reduced.has_value();
  try {
    for (size_t q = 0; q < setup_.qps.size(); ++q) {
      // QP q of member m reaches the receiver's QP q, on its member m.
      const size_t m = q / per_member;
      DeviceRuntime& member = *devices_.members[m];
      QpLink link;
      link.peer_gid = m == 0 ? reply->endpoint.gid : reply->endpoint.more_members[m - 1].gid;
      const uint8_t peer_mtu =
          m == 0 ? reply->endpoint.mtu : reply->endpoint.more_members[m - 1].mtu;
      const ibv_mtu mtu = link_mtu(member.info().active_mtu, peer_mtu);
      link.peer_qpn = reply->endpoint.qps[q].qpn;
      link.peer_psn = reply->endpoint.qps[q].psn;
      link.local_psn = psns_[q];
      link.mtu = mtu;
      link.traffic_class = static_cast<uint8_t>(agreed->traffic_class);
      link.service_level = static_cast<uint8_t>(agreed->service_level);
      link.timeout = settings_.timeout;
      link.retry_count = settings_.retry_count;
      link.pkey_index = settings_.pkey_index;
      link.access = IBV_ACCESS_REMOTE_WRITE;  // the receiver writes clear-to-send slots
      link.ece = reduced;
      ece_set = connect_qp(*setup_.qps[q], member, link) && ece_set;
      if (q % per_member == 0) {
        remaker_links_.links.push_back(link);
      }
    }
  } catch (const std::exception& e) {
    return fail(ncclSystemError, net::RejectReason::ResourceFailure, e.what());
  }
  ece_in_force_ = ece_set ? reduced : std::nullopt;
  setup_.remote_sizes_addr = reply->sizes_area.address;
  setup_.remote_sizes_rkey = reply->sizes_area.rkey;
  setup_.more_remote_sizes_rkeys = reply->more_sizes_rkeys;
  setup_.traffic_class = agreed->traffic_class;
  net::Ready ready;
  ready.nonce = nonce_;
  if (const Status queued = queue_message(*channel_, ready); !queued) {
    return fail(ncclInternalError, net::RejectReason::Internal,
                "cannot send ready: " + queued.error());
  }
  // The peer watch's hello goes with it, in the same write (a receiver that does not watch
  // reads Ready and closes; it never reads the hello).
  if (settings_.peer_watch) {
    if (const Status queued = queue_watch_hello(*channel_, nonce_); !queued) {
      return fail(ncclInternalError, net::RejectReason::Internal, queued.error());
    }
  }
  state_ = State::SendReady;
  return Step::Next;
}

SendConnector::Step SendConnector::on_send_ready() {
  switch (channel_->flush()) {
    case net::IoStatus::InProgress:
      return Step::Wait;
    case net::IoStatus::Error:
      return fail(ncclSystemError, net::RejectReason::None, channel_->error().message);
    case net::IoStatus::Done:
      state_ = State::Done;
      return Step::Next;
  }
  return Step::Wait;
}

}  // namespace roce
