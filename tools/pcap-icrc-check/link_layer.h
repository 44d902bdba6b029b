// Finds the IP packet inside a captured frame for the link types a RoCEv2 capture comes in:
// Ethernet (with up to two VLAN tags; loopback captures are Ethernet with zero MACs), Linux
// cooked SLL and SLL2 (tshark -i any), and raw IP.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace vroce::pcapcheck {

inline constexpr std::uint32_t kLinkEthernet = 1;
inline constexpr std::uint32_t kLinkRaw = 101;
inline constexpr std::uint32_t kLinkLinuxSll = 113;
inline constexpr std::uint32_t kLinkIpv4 = 228;
inline constexpr std::uint32_t kLinkIpv6 = 229;
inline constexpr std::uint32_t kLinkLinuxSll2 = 276;

bool link_type_supported(std::uint32_t link_type);
std::string link_type_name(std::uint32_t link_type);

enum class LinkResult { Ip, NotIp, Truncated };

// On LinkResult::Ip, *ip is the frame from the IP header on.
LinkResult ip_of_frame(std::uint32_t link_type, std::span<const std::uint8_t> frame,
                       std::span<const std::uint8_t>* ip);

}  // namespace vroce::pcapcheck
