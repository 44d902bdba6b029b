// The IP and UDP facts of one RoCEv2 packet that its ICRC covers and that vroce's UDP-socket
// path does not see in a header: the address family, both addresses and both ports.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

struct sockaddr;

namespace vroce::wire {

inline constexpr std::uint16_t kRoceUdpPort = 4791;

enum class IpFamily : std::uint8_t { V4 = 4, V6 = 6 };

struct FlowAddress {
  IpFamily family = IpFamily::V4;
  std::array<std::uint8_t, 16> src_ip{};  // network order; IPv4 uses the first four bytes
  std::array<std::uint8_t, 16> dst_ip{};
  std::uint16_t src_port = 0;  // host order
  std::uint16_t dst_port = kRoceUdpPort;

  friend bool operator==(const FlowAddress&, const FlowAddress&) = default;
};

// The flow between two socket addresses (sockaddr_in or sockaddr_in6, as recvmsg and
// IP_PKTINFO/IPV6_PKTINFO report them). An IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a
// dual-stack socket reports) is an IPv4 packet on the wire, so it becomes an IPv4 flow.
// std::nullopt when a family is not AF_INET/AF_INET6 or the two sides differ.
std::optional<FlowAddress> flow_from_sockaddrs(const sockaddr& src, const sockaddr& dst) noexcept;

// IPv4 flow from addresses in host order (0x7F00000B is 127.0.0.11).
FlowAddress flow_v4(std::uint32_t src_ip, std::uint32_t dst_ip, std::uint16_t src_port,
                    std::uint16_t dst_port = kRoceUdpPort) noexcept;

}  // namespace vroce::wire
