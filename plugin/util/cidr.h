// Address ranges in CIDR notation ("10.0.0.0/8", "fd00::/8"), as NCCL_IB_ADDR_RANGE takes them,
// matched against 16-byte GIDs (an IPv4 address appears in a GID as ::ffff:a.b.c.d).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "roce/result.h"
#include "util/config.h"

namespace roce {

using Ipv6Bytes = std::array<uint8_t, 16>;

struct Cidr {
  AddressFamily family = AddressFamily::Ipv4;
  Ipv6Bytes network{};    // IPv4 ranges are stored IPv4-mapped (::ffff:a.b.c.d)
  int prefix_length = 0;  // as written: 0..32 for IPv4, 0..128 for IPv6

  // True when the 16-byte address lies inside the range (an IPv4 range only matches
  // IPv4-mapped addresses).
  bool contains(const Ipv6Bytes& address) const;
};

// Parses "address/prefix"; malformed text fails with the reason.
Result<Cidr> parse_cidr(std::string_view text);

// True for ::ffff:a.b.c.d.
bool is_ipv4_mapped(const Ipv6Bytes& address);

// "10.0.0.1" for IPv4-mapped addresses, RFC 5952 text ("fe80::1") otherwise.
std::string address_to_string(const Ipv6Bytes& address);

}  // namespace roce
