// Path MTU and timer encodings of the verbs API: ibv_mtu <-> bytes, the payload a netdev MTU
// leaves after RoCEv2's headers, the port's active_mtu rule, the RNR NAK timer code table and
// the local ACK timeout 4.096 us * 2^timeout.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "wire/flow.h"

namespace vroce::wire {

// IBV_MTU_256 .. IBV_MTU_4096 -> 256 .. 4096; std::nullopt for anything else.
std::optional<std::uint32_t> mtu_bytes(int ibv_mtu_value) noexcept;
// 256 .. 4096 (exact powers) -> IBV_MTU_256 .. IBV_MTU_4096; std::nullopt for anything else.
std::optional<ibv_mtu> mtu_enum_from_bytes(std::uint32_t bytes) noexcept;
// The largest IBV_MTU_* whose size is <= bytes; std::nullopt below 256.
std::optional<ibv_mtu> mtu_enum_floor(std::uint32_t bytes) noexcept;

// IP + UDP + BTH + extension headers + ICRC around the payload of one packet.
std::size_t roce_overhead(IpFamily family, std::size_t extension_header_bytes) noexcept;

// The largest payload that fits a netdev MTU with the given extension headers (RETH + ImmDt,
// 20 bytes, is the worst case of the data-carrying RC opcodes); 0 when nothing fits.
std::size_t max_payload_for_netdev(std::uint32_t netdev_mtu, IpFamily family,
                                   std::size_t extension_header_bytes) noexcept;

// The path MTU a RoCE port reports as active_mtu for a netdev MTU, by the kernel's rule (the
// netdev MTU less 96 bytes of worst-case headers, rounded down to an IB MTU): 1500 -> 1024,
// 9000 -> 4096. std::nullopt when below IBV_MTU_256.
std::optional<ibv_mtu> active_mtu_for_netdev(std::uint32_t netdev_mtu) noexcept;

// RNR NAK timer code (0..31) -> the minimum wait; code 0 is 655.36 ms. nullopt above 31.
std::optional<std::chrono::microseconds> rnr_timer(unsigned code) noexcept;
// The code of the shortest wait that is at least `wait`; 0 (the longest, 655.36 ms) when no
// code of 1..31 is long enough.
unsigned rnr_timer_code_at_least(std::chrono::microseconds wait) noexcept;

// Local ACK timeout 4.096 us * 2^timeout. Code 0 means "wait forever" (infinite == true).
struct AckTimeout {
  bool infinite = false;
  std::chrono::nanoseconds period{0};
};
// nullopt above 31 (ibv_modify_qp rejects such values).
std::optional<AckTimeout> local_ack_timeout(unsigned code) noexcept;

}  // namespace vroce::wire
