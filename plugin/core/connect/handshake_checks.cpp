// Handshake decisions: see handshake_checks.h.
#include "core/connect/handshake_checks.h"

#include <fmt/format.h>

#include "core/datapath/cts_ring.h"
#include "core/datapath/data_path_limits.h"

namespace roce {

net::RemoteRing cts_ring_geometry(uint64_t address, uint32_t rkey) {
  return net::RemoteRing{address, rkey, kCtsRingSlots, static_cast<uint32_t>(kCtsSlotBytes)};
}

net::RemoteRing sizes_area_geometry(uint64_t address, uint32_t rkey) {
  return net::RemoteRing{address, rkey, static_cast<uint32_t>(kMaxRequests),
                         static_cast<uint32_t>(kMaxRecvs * sizeof(int32_t))};
}

std::optional<Refusal> check_connect_request(const net::ConnectRequest& request) {
  const net::RemoteRing& ring = request.cts_ring;
  if (ring.slot_count != kCtsRingSlots || ring.slot_size != kCtsSlotBytes) {
    return Refusal{net::RejectReason::BadSlots,
                   fmt::format("the sender's clear-to-send ring has {} slots of {} bytes; this "
                               "plugin (version {}) needs {} slots of {} bytes; run the same "
                               "plugin version on both sides",
                               ring.slot_count, ring.slot_size,
                               net::plugin_version_text(net::plugin_version_code()), kCtsRingSlots,
                               kCtsSlotBytes)};
  }
  if (request.max_recvs != static_cast<uint32_t>(kMaxRecvs)) {
    return Refusal{net::RejectReason::BadMaxRecvs,
                   fmt::format("the sender groups up to {} receives, this plugin {}; run the "
                               "same plugin version on both sides",
                               request.max_recvs, kMaxRecvs)};
  }
  return std::nullopt;
}

Status check_connect_reply(const net::ConnectReply& reply, size_t qp_count) {
  if (reply.endpoint.qps.size() != qp_count) {
    return failure(fmt::format("the receiver answered with {} QPs for the {} this side offered",
                               reply.endpoint.qps.size(), qp_count));
  }
  const net::RemoteRing expected = sizes_area_geometry(0, 0);
  if (reply.sizes_area.slot_count != expected.slot_count ||
      reply.sizes_area.slot_size != expected.slot_size) {
    return failure(
        fmt::format("the receiver's sizes area has {} slots of {} bytes, this plugin needs {} "
                    "of {}; run the same plugin version on both sides",
                    reply.sizes_area.slot_count, reply.sizes_area.slot_size, expected.slot_count,
                    expected.slot_size));
  }
  return {};
}

ibv_mtu link_mtu(ibv_mtu local, uint8_t peer) {
  const auto peer_mtu = static_cast<ibv_mtu>(peer);
  return peer_mtu < local ? peer_mtu : local;
}

BindAddress bind_address_for_gid(const std::array<uint8_t, 16>& gid) {
  BindAddress out;
  bool mapped = gid[10] == 0xff && gid[11] == 0xff;
  for (int i = 0; i < 10 && mapped; ++i) {
    mapped = gid[static_cast<size_t>(i)] == 0;
  }
  if (mapped) {
    out.family = AddressFamily::Ipv4;
    for (size_t i = 0; i < 4; ++i) {
      out.bytes[i] = gid[12 + i];
    }
  } else {
    out.family = AddressFamily::Ipv6;
    out.bytes = gid;
  }
  return out;
}

}  // namespace roce
