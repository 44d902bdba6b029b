// The RoCEv2 invariant CRC, bit-exact with real NICs: CRC-32 over 8 bytes of 0xFF (the masked
// pseudo-LRH), the IP header with its variant fields set to ones (IPv4: TOS, TTL, header
// checksum; IPv6: traffic class, flow label, hop limit), the UDP header with its checksum set to
// 0xFFFF, the BTH with byte 4 (FECN, BECN, reserved) set to 0xFF, then the rest of the UDP payload
// up to the ICRC. The ICRC is stored little-endian in the payload's last four bytes.
//
// Two ways to get the IP and UDP headers:
// - captured: the real headers of a captured packet (pcap-icrc-check);
// - socket path: headers reconstructed from a FlowAddress, for vroce, which sends on unconnected
//   UDP sockets with DF set, so an IPv4 header has ID 0 and flags DF; a receiver knows the
//   addresses, ports (recvmsg + IP_PKTINFO) and the length.
// Both use the incremental CRC, so headers and payload pieces need not be contiguous.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "wire/crc32.h"
#include "wire/flow.h"
#include "wire/ip_udp.h"

namespace vroce::wire {

// ---- socket path, incremental ---------------------------------------------------------------

// State after the pseudo-LRH, IP and UDP headers of a packet whose UDP payload (BTH through
// ICRC) is udp_payload_len bytes.
std::uint32_t icrc_begin(const FlowAddress& flow, std::size_t udp_payload_len) noexcept;

// Feeds the 12-byte BTH at `bth`, with byte 4 masked.
std::uint32_t icrc_update_bth(std::uint32_t state, const std::uint8_t* bth) noexcept;

// Feeds what follows the BTH (extension headers, payload, pad).
inline std::uint32_t icrc_update(std::uint32_t state,
                                 std::span<const std::uint8_t> bytes) noexcept {
  return crc32_update(state, bytes);
}

inline std::uint32_t icrc_final(std::uint32_t state) noexcept {
  return crc32_final(state);
}

// ---- whole packets -------------------------------------------------------------------------

// The ICRC a UDP payload (BTH .. ICRC) must carry when sent over the socket path of `flow`;
// std::nullopt when it is shorter than a BTH and an ICRC.
std::optional<std::uint32_t> icrc_compute(const FlowAddress& flow,
                                          std::span<const std::uint8_t> udp_payload) noexcept;

// The ICRC stored in the last four bytes (little-endian).
std::uint32_t icrc_stored(std::span<const std::uint8_t> udp_payload) noexcept;

// True when the payload's stored ICRC matches; false also when it is too short to carry one.
bool icrc_valid(const FlowAddress& flow, std::span<const std::uint8_t> udp_payload) noexcept;

// The ICRC over a captured packet's own IP and UDP headers; std::nullopt when its UDP payload is
// too short for a BTH and an ICRC.
std::optional<std::uint32_t> icrc_compute_captured(const IpUdpView& packet) noexcept;

}  // namespace vroce::wire
