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

PendingAccept::PendingAccept(std::shared_ptr<DeviceRuntime> device, net::Socket socket,
                             uint64_t nonce, ClassOffer offer, const ConnectionSettings& settings)
    : device_(std::move(device)),
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
        *comm = new RecvComm(device_, std::move(setup_));
        ROCE_INFO(NCCL_NET, "accepted on {} from {}: {} qp{}, tc {}{}, inline {}, {}{}",
                  device_->name(), peer_text_, (*comm)->qp_count(),
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
  reply.endpoint =
      local_endpoint(*device_, agreed->traffic_class, agreed->service_level, setup_.qps, psns_);
  reply.sizes_area = sizes_area_geometry(setup_.sizes_area.addr(), setup_.sizes_area.rkey());
  reply.ece = ece_to_wire(ece_in_force_);
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
  const bool flush = settings_.flush && device_->gdr().usable();
  setup_.cq = create_comm_cq(*device_, static_cast<int>(nqps));
  const ibv_mtu mtu = link_mtu(device_->info().active_mtu, request.endpoint.mtu);
  // As net_ib: the receiver's data QPs carry the clear-to-send writes and the ACKs of the data,
  // so NCCL_IB_FIFO_TC (when set) is their class; the flush QP keeps the agreed one.
  const int qp_class = settings_.fifo_traffic_class.value_or(agreed.traffic_class);
  // As net_ib: the sender's ECE is set on every QP before RTR, and QP 0's reduced ECE is the
  // reply (a device without ECE answers none).
  const std::optional<ibv_ece> peer_ece = ece_from_wire(request.ece);
  bool ece_set = peer_ece.has_value();
  for (size_t q = 0; q < nqps; ++q) {
    setup_.qps.push_back(
        create_data_qp(*device_, setup_.cq, kRecvQueueDepth, settings_.use_inline));
    psns_.push_back(random_psn());
    QpLink link;
    link.peer_gid = request.endpoint.gid;
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
    ece_set = connect_qp(*setup_.qps.back(), *device_, link) && ece_set;
  }
  ece_in_force_ = ece_set ? setup_.qps.front()->query_ece() : std::nullopt;
  setup_.cts_staging =
      RegisteredBuffer(device_->pd(), size_t{kMaxRequests} * kCtsSlotBytes, IBV_ACCESS_LOCAL_WRITE);
  setup_.sizes_area =
      RegisteredBuffer(device_->pd(), size_t{kMaxRequests} * kMaxRecvs * sizeof(int32_t),
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  setup_.remote_ring_addr = request.cts_ring.address;
  setup_.remote_ring_rkey = request.cts_ring.rkey;
  setup_.traffic_class = agreed.traffic_class;
  setup_.fifo_traffic_class = qp_class;
  setup_.split_data = request.split_data != 0;
  if (flush) {
    // A QP connected to itself, on the comm's class, reads back one byte of GPU memory.
    setup_.flush_word = RegisteredBuffer(device_->pd(), 64, IBV_ACCESS_LOCAL_WRITE);
    setup_.flush_qp = create_data_qp(*device_, setup_.cq, 1, false);  // posts only READs
    QpLink self;
    self.peer_gid = device_->info().gid.entry.gid;
    self.peer_qpn = setup_.flush_qp->qp_num();
    self.peer_psn = random_psn();
    self.local_psn = self.peer_psn;
    self.mtu = device_->info().active_mtu;
    self.traffic_class = static_cast<uint8_t>(agreed.traffic_class);
    self.service_level = static_cast<uint8_t>(agreed.service_level);
    self.timeout = settings_.timeout;
    self.retry_count = settings_.retry_count;
    self.pkey_index = settings_.pkey_index;
    self.access = IBV_ACCESS_REMOTE_READ;
    connect_qp(*setup_.flush_qp, *device_, self);
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
  state_ = State::Done;
  return Step::Next;
}

}  // namespace roce
