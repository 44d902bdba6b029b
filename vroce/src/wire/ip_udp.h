// Reads the IPv4/IPv6 and UDP headers of a captured packet (the bytes from the IP header on, as
// a capture or a raw socket delivers them), so the ICRC can be checked over the real headers and
// the DSCP/ECN and TTL a sender used can be reported.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "wire/flow.h"

namespace vroce::wire {

enum class IpUdpError : std::uint8_t {
  Ok,
  Truncated,            // fewer bytes than the IP or UDP header or the IP total length needs
  NotIp,                // IP version is neither 4 nor 6
  BadIpHeader,          // IPv4 IHL < 5 or total length shorter than the headers
  UnsupportedIpHeader,  // IPv4 options or IPv6 extension headers: RoCEv2 packets carry neither
  Fragment,             // an IPv4 fragment (MF set or offset non-zero): RoCEv2 is never fragmented
  NotUdp,               // the IP payload is not UDP
  BadUdpLength,         // UDP length below 8 or beyond the IP payload
};

std::string_view ip_udp_error_name(IpUdpError error) noexcept;

struct IpUdpView {
  IpFamily family = IpFamily::V4;
  std::uint8_t traffic_class = 0;  // IPv4 TOS or IPv6 traffic class: DSCP << 2 | ECN
  std::uint8_t hop_limit = 0;      // IPv4 TTL or IPv6 hop limit
  FlowAddress flow;
  std::span<const std::uint8_t> ip_header;
  std::span<const std::uint8_t> udp_header;
  std::span<const std::uint8_t> udp_payload;  // exactly UDP length - 8 bytes
};

struct IpUdpResult {
  IpUdpError error = IpUdpError::Ok;
  IpUdpView view;
};

// Bytes beyond the IP total length (Ethernet padding of short frames) are ignored.
IpUdpResult parse_ip_udp(std::span<const std::uint8_t> ip_packet) noexcept;

}  // namespace vroce::wire
