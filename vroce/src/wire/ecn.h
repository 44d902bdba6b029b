// The ECN field (RFC 3168): the two low bits of the IPv4 TOS / IPv6 traffic class byte. RoCEv2
// congestion control marks ECN-capable packets (ECT(0) or ECT(1)) CE in a congested switch
// queue; the receiving NIC answers a CE mark with a CNP to the sender's QP.
#pragma once

#include <cstdint>

namespace vroce::wire {

inline constexpr std::uint8_t kEcnMask = 0x03;
inline constexpr std::uint8_t kEcnNotEct = 0x00;  // not ECN-capable transport
inline constexpr std::uint8_t kEcnEct1 = 0x01;
inline constexpr std::uint8_t kEcnEct0 = 0x02;  // what traffic class 106 (DSCP 26) carries
inline constexpr std::uint8_t kEcnCe = 0x03;    // congestion experienced

constexpr std::uint8_t ecn_bits(std::uint8_t traffic_class) noexcept {
  return traffic_class & kEcnMask;
}

}  // namespace vroce::wire
