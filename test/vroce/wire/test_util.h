// Small helpers shared by the wire tests: hex strings to bytes, seeded random bytes, and
// rewriting a packet's ICRC after a test has deliberately broken some other field.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "wire/flow.h"

namespace vroce::wire::test {

// "0a0b 0c" -> {0x0a, 0x0b, 0x0c}; whitespace is ignored.
// A RoCEv2 CNP sent by a Mellanox ConnectX-4 Lx, as captured on the wire (Ethernet frame, 74
// bytes). Source: scapy's test suite, test/contrib/roce.uts ("RoCE CNP captured on ConnectX-4
// Lx", github.com/secdev/scapy), where it is the reference for scapy's ICRC. Its IPv4 header has
// ID 0x718c, TOS 0xc2 and TTL 64, and BTH byte 4 is 0x40 (BECN): the ID is covered, the other
// three are masked, so this vector exercises every masking rule of the IPv4 form.
inline constexpr std::string_view kConnectX4LxCnpFrame =
    "e41d2dab2bc2 7cfe90643b32 0800"                   // Ethernet
    "45c2 003c 718c 4000 4011 9161 0a001101 0a001201"  // IPv4 10.0.17.1 -> 10.0.18.1
    "0000 12b7 0028 0000"                              // UDP 0 -> 4791, len 40
    "8100ffff 40000118 00000000"                       // BTH: CNP, BECN, QP 0x118
    "00000000000000000000000000000000"                 // 16 reserved bytes
    "82fd002a";                                        // ICRC (little-endian)

std::vector<std::uint8_t> from_hex(std::string_view hex);

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed);

// Recomputes and stores the socket-path ICRC of a UDP payload in place.
void reseal(std::vector<std::uint8_t>& udp_payload, const FlowAddress& flow);

FlowAddress test_flow_v4();
FlowAddress test_flow_v6();

}  // namespace vroce::wire::test
