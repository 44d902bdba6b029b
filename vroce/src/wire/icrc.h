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
//   addresses, ports (recvmsg + IP_PKTINFO) and the length. The one exception is segment j of a
//   UDP GSO burst, whose ID is j, below kMaxBurstSegments (below).
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

// What icrc_begin returns, remembered for the (flow, length) pairs seen last: the state after the
// headers depends on nothing else, and a connection's packets come in a few sizes (a ping-pong's
// requests and ACKs, a stream's full-MTU packets), so the 36 or 56 header bytes, about 200
// instructions of the ~600 a small packet's ICRC costs, are fed once per pair rather than per
// packet. An engine's one cache serves what it builds and what it parses, so a ping-pong between
// two connections keeps about eight pairs in play; with one slot per index, two of them sharing a
// slot missed on every packet (callgrind of a plugin ping-pong: half of all lookups). Hence sets of
// kWays slots, picked by a hash of the length and both ends, and replaced in turn: any kWays pairs
// that meet in a set all stay. A miss, or a different flow in the slot, computes in full and takes
// a slot, so a changed flow (a QP moved to another path) never meets a stale state. Not
// thread-safe: one owner (an engine, under its mutex).
class IcrcHeaderCache {
 public:
  std::uint32_t begin(const FlowAddress& flow, std::size_t udp_payload_len) noexcept;

  static constexpr std::size_t kSets = 16;
  static constexpr std::size_t kWays = 4;

  // How many lookups computed the state in full (for tests).
  std::uint64_t misses() const noexcept { return misses_; }

 private:
  struct Slot {
    FlowAddress flow;
    std::size_t length = 0;  // 0: empty (no packet is that short)
    std::uint32_t state = 0;
  };
  struct Set {
    Slot ways[kWays];
    std::uint32_t next = 0;  // the way the next miss replaces
  };
  Set sets_[kSets];
  std::uint64_t misses_ = 0;
};

// icrc_begin through `cache` when there is one.
inline std::uint32_t icrc_begin(IcrcHeaderCache* cache, const FlowAddress& flow,
                                std::size_t udp_payload_len) noexcept {
  return cache != nullptr ? cache->begin(flow, udp_payload_len) : icrc_begin(flow, udp_payload_len);
}

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

// ---- the IPv4 ID of UDP GSO bursts ---------------------------------------------------------

// vroce may send up to kMaxBurstSegments consecutive packets as one UDP GSO send
// (packet_io/gso_burst.h), whose segments the kernel gives IPv4 IDs 0, 1, 2, ... (an unconnected
// socket with DF set starts at 0). The ICRC covers the ID, and a receiver never sees the IP
// header, so it accepts the ICRC for any ID a burst can give a segment (icrc_matches_burst_id).
// Eight full-MTU packets fit one UDP datagram.
inline constexpr std::uint32_t kMaxBurstSegments = 8;

// What XORed onto the socket-path ICRC (IPv4 ID 0) of a packet whose UDP payload is
// udp_payload_len bytes gives its ICRC with IPv4 ID `id`, without reading the packet: CRC-32 is
// affine, so ICRC(ID id) = ICRC(ID 0) ^ the raw CRC (zero initial value, no final xor) of a
// message of the same length that is zero except for the ID. 0 for ID 0. Cached per length in a
// small lock-free table shared by all threads, so a length costs one computation per ID bit.
std::uint32_t icrc_ipv4_id_delta(std::size_t udp_payload_len, std::uint16_t id) noexcept;

// Whether `stored` is the ICRC of a packet of udp_payload_len bytes sent as segment 1 ..
// kMaxBurstSegments - 1 of a burst (IPv4 ID 1..7), where `computed` is its ICRC for ID 0: one
// XOR and up to seven compares against the cached deltas. A corrupted packet passes one of the
// eight candidates with probability 2^-29 instead of 2^-32.
bool icrc_matches_burst_id(std::size_t udp_payload_len, std::uint32_t computed,
                           std::uint32_t stored) noexcept;

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
