// The decisions connection setup takes on handshake messages, beyond what net/handshake.h's
// validation already guarantees (well-formed fields): is the peer's protocol geometry the one
// this build speaks, what MTU the link runs at, which address the listener binds. Pure: unit-
// tested without a device or a socket.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "net/handshake.h"
#include "roce/result.h"
#include "util/config.h"

namespace roce {

// What this build puts in a ConnectRequest's ring and expects back in a reply's sizes area.
net::RemoteRing cts_ring_geometry(uint64_t address, uint32_t rkey);
net::RemoteRing sizes_area_geometry(uint64_t address, uint32_t rkey);

struct Refusal {
  net::RejectReason reason = net::RejectReason::Internal;
  std::string text;  // one line for both sides' logs
};

// The receiver's checks of a ConnectRequest (after nonce and field validation).
std::optional<Refusal> check_connect_request(const net::ConnectRequest& request);

// The sender's checks of a ConnectReply: QP count equal to what it sent, sizes area geometry.
Status check_connect_reply(const net::ConnectReply& reply, size_t qp_count);

// The path MTU: the smaller of the two ports' active MTUs (ibv_mtu codes 1..5).
ibv_mtu link_mtu(ibv_mtu local, uint8_t peer);

// The TCP address a listener binds for a device's GID: IPv4-mapped GIDs (::ffff:a.b.c.d) give
// the IPv4 address, anything else the IPv6 address.
struct BindAddress {
  AddressFamily family = AddressFamily::Ipv4;
  std::array<uint8_t, 16> bytes{};  // IPv4 in the first four bytes
};
BindAddress bind_address_for_gid(const std::array<uint8_t, 16>& gid);

}  // namespace roce
