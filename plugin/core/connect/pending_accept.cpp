// One incoming connection's state machine: see pending_accept.h.
#include "core/connect/pending_accept.h"

#include <fmt/format.h>

#include "core/connect/handshake_checks.h"
#include "core/connect/qp_setup.h"
#include "core/datapath/cts_ring.h"
#include "core/datapath/recv_comm.h"
#include "core/device/device_runtime.h"
#include "util/log.h"

namespace roce {

PendingAccept::PendingAccept(const CommDevices& devices, net::Socket socket, uint64_t nonce,
                             ClassOffer offer, const ConnectionSettings& settings)
    : device_(devices.members.front()),
      devices_(devices),
      channel_(std::move(socket), net::Clock::now() + settings.handshake_timeout,
               kMaxHandshakeFrame),
      nonce_(nonce),
      offer_(std::move(offer)),
      settings_(settings),
      accepted_at_(net::Clock::now()),
      peer_text_(channel_.peer().to_string()) {}

PendingAccept::~PendingAccept() = default;

PendingAccept::Status PendingAccept::step(RecvComm** comm) {
  *comm = nullptr;
  for (;;) {
    Step s = Step::Wait;
    switch (state_) {
      case State::AwaitRequest:
        s = on_await_request();
        break;
      case State::SendReply:
        s = on_send_reply();
        break;
      case State::AwaitReady:
        s = on_await_ready();
        break;
      case State::Rejecting:
        s = on_rejecting();
        break;
      case State::Done:
        setup_.peer = peer_text_;
        setup_.peer_watch = watch_peer(channel_, nonce_, settings_, *device_, peer_text_);
        setup_.recovery =
            make_recovery_setup(settings_, peer_version_, setup_.peer_watch != nullptr, nonce_,
                                std::move(remaker_links_));
        *comm = new RecvComm(device_, std::move(setup_));
        ROCE_INFO(NCCL_NET, "accepted on {} from {}: {} qp{}, tc {}{}, inline {}, {}{}",
                  devices_name(devices_.members), peer_text_, (*comm)->qp_count(),
                  (*comm)->qp_count() == 1 ? "" : "s", (*comm)->traffic_class(),
                  (*comm)->fifo_traffic_class() != (*comm)->traffic_class()
                      ? fmt::format(" (clear-to-send path tc {}, NCCL_IB_FIFO_TC)",
                                    (*comm)->fifo_traffic_class())
                      : "",
                  (*comm)->max_inline(), describe_ece(ece_in_force_),
                  (*comm)->flush_enabled() ? ", gpudirect flush" : "");
        return Status::Connected;
      case State::Dropped:
        return Status::Dropped;
    }
    if (s == Step::Wait) {
      return Status::Waiting;
    }
    if (s == Step::Drop) {
      return Status::Dropped;
    }
  }
}

PendingAccept::Step PendingAccept::drop(const std::string& message) {
  if (drop_reason_.empty()) {
    drop_reason_ = message;
  }
  state_ = State::Dropped;
  return Step::Drop;
}

PendingAccept::Step PendingAccept::reject(net::RejectReason reason, const std::string& message) {
  drop_reason_ = fmt::format("refused ({}): {}", net::reject_reason_name(reason), message);
  // The nonce is never shown to a peer that did not show it.
  if (!queue_message(channel_, make_reject(reason, message, authenticated_ ? nonce_ : 0))) {
    state_ = State::Dropped;
    return Step::Drop;
  }
  state_ = State::Rejecting;
  return Step::Next;
}

PendingAccept::Step PendingAccept::on_rejecting() {
  // Whatever happens, the connection goes: delivered, refused by the peer, or out of time.
  if (channel_.flush() == net::IoStatus::InProgress) {
    return Step::Wait;
  }
  state_ = State::Dropped;
  return Step::Drop;
}

PendingAccept::Step PendingAccept::on_await_request() {
  std::vector<uint8_t> message;
  switch (channel_.receive(&message)) {
    case net::IoStatus::InProgress:
      return Step::Wait;
    case net::IoStatus::Error:
      // Closed, reset, timed out or oversized before a request: nothing to answer.
      return drop(channel_.error().message);
    case net::IoStatus::Done:
      break;
  }
  net::DecodeExpectations expect;
  expect.nonce = nonce_;
  net::DecodeResult decoded = net::decode_message(message, expect);
  if (!decoded.ok()) {
    return reject(decoded.reason, decoded.detail);
  }
  if (const auto* r = std::get_if<net::Reject>(&*decoded.message); r != nullptr && r->nonce != 0) {
    // The sender for this handle refused before sending a request (its class cannot run here,
    // for example): accept fails too instead of waiting for it (net_ib parity F12).
    if (r->reason == static_cast<uint16_t>(net::RejectReason::TrafficClassMismatch)) {
      listener_failure_ = ncclRemoteError;
    }
    return drop(fmt::format("the sender refused before connecting ({}): {}",
                            net::reject_reason_name(r->reason), r->text));
  }
  const auto* request = std::get_if<net::ConnectRequest>(&*decoded.message);
  if (request == nullptr) {
    return reject(net::RejectReason::UnknownKind,
                  fmt::format("expected a connect request, got {}",
                              net::message_kind_name(net::kind_of(*decoded.message))));
  }
  authenticated_ = true;  // decode checked the nonce
  peer_text_ = describe_peer(channel_.peer(), &request->endpoint);
  if (auto refusal = check_connect_request(*request)) {
    return reject(refusal->reason, refusal->text);
  }
  if (request->endpoint.member_count != devices_.members.size()) {
    // Both ends pair their members index by index (QP q on member q / per-member count).
    return reject(net::RejectReason::MemberCountMismatch,
                  fmt::format("the sender's NIC has {} member(s), this receiver's ({}) {}: fuse "
                              "NICs alike on every node (NCCL_NET_MERGE_LEVEL, "
                              "NCCL_IB_MERGE_NICS)",
                              request->endpoint.member_count, devices_name(devices_.members),
                              devices_.members.size()));
  }
  auto agreed =
      receiver_agree(offer_, request->endpoint.traffic_class, request->endpoint.service_level)
          .and_then([&](const ClassAgreement& received) {
            return apply_host_override(received, device_->global_class_override(),
                                       device_->override_file());
          });
  if (!agreed) {
    listener_failure_ = ncclInvalidUsage;
    return reject(net::RejectReason::TrafficClassMismatch, agreed.error());
  }
  try {
    create_resources(*request, *agreed);
  } catch (const std::exception& e) {
    return reject(net::RejectReason::ResourceFailure, e.what());
  }
  net::ConnectReply reply;
  reply.nonce = nonce_;
  reply.endpoint = local_endpoint(devices_.members, agreed->traffic_class, agreed->service_level,
                                  setup_.qps, psns_);
  reply.sizes_area = sizes_area_geometry(setup_.sizes_area.addr(), setup_.sizes_area.rkey());
  reply.ece = ece_to_wire(ece_in_force_);
  for (size_t m = 1; m < devices_.members.size(); ++m) {
    reply.more_sizes_rkeys.push_back(setup_.sizes_area.rkey(m));
  }
  if (const roce::Status queued = queue_message(channel_, reply); !queued) {
    return reject(net::RejectReason::Internal, "cannot send the reply: " + queued.error());
  }
  state_ = State::SendReply;
  requested_at_ = net::Clock::now();
  return Step::Next;
}

void PendingAccept::create_resources(const net::ConnectRequest& request,
                                     const ClassAgreement& agreed) {
  const size_t nqps = request.endpoint.qps.size();
  const size_t members = devices_.members.size();
  peer_version_ = request.endpoint.plugin_version;
  remaker_links_.members = devices_.members;
  remaker_links_.recv_depth = kRecvQueueDepth;
  remaker_links_.inline_data = settings_.use_inline;
  const size_t per_member = nqps / members;  // the codec checked that it divides
  setup_.members = devices_.members;
  setup_.device_id = devices_.id;
  // As net_ib: the receiver's data QPs carry the clear-to-send writes and the ACKs of the data,
  // so NCCL_IB_FIFO_TC (when set) is their class; the flush QPs keep the agreed one.
  const int qp_class = settings_.fifo_traffic_class.value_or(agreed.traffic_class);
  // As net_ib: the sender's ECE is set on every QP before RTR, and QP 0's reduced ECE is the
  // reply (a device without ECE answers none).
  const std::optional<ibv_ece> peer_ece = ece_from_wire(request.ece);
  bool ece_set = peer_ece.has_value();
  for (size_t m = 0; m < members; ++m) {
    // QP q of member m (q / per_member == m) reaches the sender's QP q, on its member m.
    DeviceRuntime& member = *devices_.members[m];
    std::shared_ptr<verbs::CompletionQueue> cq =
        create_comm_cq(member, static_cast<int>(per_member));
    const ibv_mtu mtu =
        link_mtu(member.info().active_mtu,
                 m == 0 ? request.endpoint.mtu : request.endpoint.more_members[m - 1].mtu);
    for (size_t i = 0; i < per_member; ++i) {
      const size_t q = m * per_member + i;
      setup_.qps.push_back(create_data_qp(member, cq, kRecvQueueDepth, settings_.use_inline));
      psns_.push_back(random_psn());
      QpLink link;
      link.peer_gid = m == 0 ? request.endpoint.gid : request.endpoint.more_members[m - 1].gid;
      link.peer_qpn = request.endpoint.qps[q].qpn;
      link.peer_psn = request.endpoint.qps[q].psn;
      link.local_psn = psns_.back();
      link.mtu = mtu;
      link.traffic_class = static_cast<uint8_t>(qp_class);
      link.service_level = static_cast<uint8_t>(agreed.service_level);
      link.timeout = settings_.timeout;
      link.retry_count = settings_.retry_count;
      link.pkey_index = settings_.pkey_index;
      link.access = IBV_ACCESS_REMOTE_WRITE;  // the sender writes data and sizes
      link.ece = peer_ece;
      ece_set = connect_qp(*setup_.qps.back(), member, link) && ece_set;
      if (i == 0) {
        remaker_links_.links.push_back(link);
      }
    }
    remaker_links_.cqs.push_back(cq);
    if (m == 0) {
      setup_.cq = std::move(cq);
    } else {
      setup_.more_cqs.push_back(std::move(cq));
    }
  }
  ece_in_force_ = ece_set ? setup_.qps.front()->query_ece() : std::nullopt;
  setup_.cts_staging =
      RegisteredBuffer(device_->pd(), size_t{kMaxRequests} * kCtsSlotBytes, IBV_ACCESS_LOCAL_WRITE);
  // The sender writes a multi-receive's sizes through the member that carries the message.
  setup_.sizes_area =
      RegisteredBuffer(device_->pd(), size_t{kMaxRequests} * kMaxRecvs * sizeof(int32_t),
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  for (size_t m = 1; m < members; ++m) {
    setup_.sizes_area.register_also(devices_.members[m]->pd(),
                                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    // Clear-to-send writes leave through QP 0, on member 0 until a recovery epoch leaves it out.
    setup_.cts_staging.register_also(devices_.members[m]->pd(), IBV_ACCESS_LOCAL_WRITE);
  }
  setup_.remote_ring_addr = request.cts_ring.address;
  setup_.remote_ring_rkey = request.cts_ring.rkey;
  setup_.traffic_class = agreed.traffic_class;
  setup_.fifo_traffic_class = qp_class;
  setup_.split_data = request.split_data != 0;
  // GPUDirect flush: a QP connected to itself on every member, since each member's NIC wrote the
  // messages it carried; all members must offer GPUDirect for any to flush.
  bool flush = settings_.flush;
  for (const auto& member : devices_.members) {
    flush = flush && member->gdr().usable();
  }
  if (flush) {
    setup_.flush_word =
        RegisteredBuffer(device_->pd(), kFlushWordStride * members, IBV_ACCESS_LOCAL_WRITE);
    for (size_t m = 0; m < members; ++m) {
      DeviceRuntime& member = *devices_.members[m];
      if (m > 0) {
        setup_.flush_word.register_also(member.pd(), IBV_ACCESS_LOCAL_WRITE);
      }
      // Posts only READs; its completions go to its member's CQ.
      auto qp = create_data_qp(member, m == 0 ? setup_.cq : setup_.more_cqs[m - 1], 1, false);
      QpLink self;
      self.peer_gid = member.info().gid.entry.gid;
      self.peer_qpn = qp->qp_num();
      self.peer_psn = random_psn();
      self.local_psn = self.peer_psn;
      self.mtu = member.info().active_mtu;
      self.traffic_class = static_cast<uint8_t>(agreed.traffic_class);
      self.service_level = static_cast<uint8_t>(agreed.service_level);
      self.timeout = settings_.timeout;
      self.retry_count = settings_.retry_count;
      self.pkey_index = settings_.pkey_index;
      self.access = IBV_ACCESS_REMOTE_READ;
      connect_qp(*qp, member, self);
      if (m == 0) {
        setup_.flush_qp = std::move(qp);
      } else {
        setup_.more_flush_qps.push_back(std::move(qp));
      }
    }
  }
}

PendingAccept::Step PendingAccept::on_send_reply() {
  switch (channel_.flush()) {
    case net::IoStatus::InProgress:
      return Step::Wait;
    case net::IoStatus::Error:
      return drop("sending the reply: " + channel_.error().message);
    case net::IoStatus::Done:
      state_ = State::AwaitReady;
      return Step::Next;
  }
  return Step::Wait;
}

PendingAccept::Step PendingAccept::on_await_ready() {
  std::vector<uint8_t> message;
  switch (channel_.receive(&message)) {
    case net::IoStatus::InProgress:
      return Step::Wait;
    case net::IoStatus::Error:
      return drop("waiting for the sender's ready: " + channel_.error().message);
    case net::IoStatus::Done:
      break;
  }
  net::DecodeExpectations expect;
  expect.nonce = nonce_;
  net::DecodeResult decoded = net::decode_message(message, expect);
  if (!decoded.ok()) {
    return drop("invalid ready: " + decoded.detail);
  }
  if (const auto* r = std::get_if<net::Reject>(&*decoded.message)) {
    if (r->reason == static_cast<uint16_t>(net::RejectReason::TrafficClassMismatch)) {
      listener_failure_ = ncclRemoteError;
    }
    return drop(
        fmt::format("the sender gave up ({}): {}", net::reject_reason_name(r->reason), r->text));
  }
  if (std::get_if<net::Ready>(&*decoded.message) == nullptr) {
    return drop(fmt::format("expected ready, got {}",
                            net::message_kind_name(net::kind_of(*decoded.message))));
  }
  if (settings_.peer_watch) {
    // The peer watch's hello, in one write: the socket's send buffer holds nothing else, so it
    // goes at once. Should it not, this side simply does not watch: the sender, seeing no hello
    // before our socket closes, does not watch us either.
    if (!queue_watch_hello(channel_, nonce_) || channel_.flush() != net::IoStatus::Done) {
      ROCE_INFO(NCCL_NET,
                "accept from {}: the peer watch's hello could not be sent ({}); this connection "
                "is not watched",
                peer_text_,
                channel_.error().message.empty() ? std::string("the socket would block")
                                                 : channel_.error().message);
      settings_.peer_watch = false;
    }
  }
  state_ = State::Done;
  return Step::Next;
}

}  // namespace roce
