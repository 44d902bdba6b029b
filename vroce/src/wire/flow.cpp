// Conversions between socket addresses and FlowAddress (see flow.h).
#include "wire/flow.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include "wire/byte_order.h"

namespace vroce::wire {
namespace {

struct Endpoint {
  IpFamily family;
  std::array<std::uint8_t, 16> ip{};
  std::uint16_t port;
};

std::optional<Endpoint> endpoint_of(const sockaddr& sa) noexcept {
  Endpoint e{};
  if (sa.sa_family == AF_INET) {
    sockaddr_in sin;
    std::memcpy(&sin, &sa, sizeof sin);
    e.family = IpFamily::V4;
    std::memcpy(e.ip.data(), &sin.sin_addr, 4);
    e.port = ntohs(sin.sin_port);
    return e;
  }
  if (sa.sa_family == AF_INET6) {
    sockaddr_in6 sin6;
    std::memcpy(&sin6, &sa, sizeof sin6);
    const std::uint8_t* a = sin6.sin6_addr.s6_addr;
    static constexpr std::uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    if (std::memcmp(a, kMappedPrefix, sizeof kMappedPrefix) == 0) {
      e.family = IpFamily::V4;
      std::memcpy(e.ip.data(), a + 12, 4);
    } else {
      e.family = IpFamily::V6;
      std::memcpy(e.ip.data(), a, 16);
    }
    e.port = ntohs(sin6.sin6_port);
    return e;
  }
  return std::nullopt;
}

}  // namespace

std::optional<FlowAddress> flow_from_sockaddrs(const sockaddr& src, const sockaddr& dst) noexcept {
  const auto s = endpoint_of(src);
  const auto d = endpoint_of(dst);
  if (!s || !d || s->family != d->family) {
    return std::nullopt;
  }
  FlowAddress f;
  f.family = s->family;
  f.src_ip = s->ip;
  f.dst_ip = d->ip;
  f.src_port = s->port;
  f.dst_port = d->port;
  return f;
}

FlowAddress flow_v4(std::uint32_t src_ip, std::uint32_t dst_ip, std::uint16_t src_port,
                    std::uint16_t dst_port) noexcept {
  FlowAddress f;
  f.family = IpFamily::V4;
  store_be32(f.src_ip.data(), src_ip);
  store_be32(f.dst_ip.data(), dst_ip);
  f.src_port = src_port;
  f.dst_port = dst_port;
  return f;
}

}  // namespace vroce::wire
