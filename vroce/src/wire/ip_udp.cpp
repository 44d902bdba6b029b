// IPv4/IPv6 + UDP header reading for captured packets (see ip_udp.h).
#include "wire/ip_udp.h"

#include <algorithm>

#include "wire/byte_order.h"

namespace vroce::wire {
namespace {

constexpr std::size_t kIpv4HeaderSize = 20;
constexpr std::size_t kIpv6HeaderSize = 40;
constexpr std::size_t kUdpHeaderSize = 8;
constexpr std::uint8_t kProtoUdp = 17;

IpUdpError parse_udp(std::span<const std::uint8_t> ip_payload, IpUdpView& v) noexcept {
  if (ip_payload.size() < kUdpHeaderSize) {
    return IpUdpError::Truncated;
  }
  const std::uint16_t udp_len = load_be16(ip_payload.data() + 4);
  if (udp_len < kUdpHeaderSize || udp_len > ip_payload.size()) {
    return IpUdpError::BadUdpLength;
  }
  v.udp_header = ip_payload.first(kUdpHeaderSize);
  v.udp_payload = ip_payload.subspan(kUdpHeaderSize, udp_len - kUdpHeaderSize);
  v.flow.src_port = load_be16(ip_payload.data());
  v.flow.dst_port = load_be16(ip_payload.data() + 2);
  return IpUdpError::Ok;
}

IpUdpError parse_v4(std::span<const std::uint8_t> p, IpUdpView& v) noexcept {
  if (p.size() < kIpv4HeaderSize) {
    return IpUdpError::Truncated;
  }
  const std::size_t ihl = std::size_t{p[0] & 0x0Fu} * 4;
  if (ihl < kIpv4HeaderSize) {
    return IpUdpError::BadIpHeader;
  }
  const std::uint16_t total = load_be16(p.data() + 2);
  if (total < ihl) {
    return IpUdpError::BadIpHeader;
  }
  if (p.size() < total) {
    return IpUdpError::Truncated;
  }
  if (ihl != kIpv4HeaderSize) {
    return IpUdpError::UnsupportedIpHeader;
  }
  const std::uint16_t frag = load_be16(p.data() + 6);
  if ((frag & 0x2000) != 0 || (frag & 0x1FFF) != 0) {
    return IpUdpError::Fragment;
  }
  if (p[9] != kProtoUdp) {
    return IpUdpError::NotUdp;
  }
  v.family = IpFamily::V4;
  v.flow.family = IpFamily::V4;
  v.traffic_class = p[1];
  v.hop_limit = p[8];
  std::copy_n(p.data() + 12, 4, v.flow.src_ip.data());
  std::copy_n(p.data() + 16, 4, v.flow.dst_ip.data());
  v.ip_header = p.first(kIpv4HeaderSize);
  return parse_udp(p.subspan(kIpv4HeaderSize, total - kIpv4HeaderSize), v);
}

IpUdpError parse_v6(std::span<const std::uint8_t> p, IpUdpView& v) noexcept {
  if (p.size() < kIpv6HeaderSize) {
    return IpUdpError::Truncated;
  }
  const std::size_t payload_len = load_be16(p.data() + 4);
  if (p.size() < kIpv6HeaderSize + payload_len) {
    return IpUdpError::Truncated;
  }
  if (p[6] != kProtoUdp) {
    // Hop-by-hop, routing, fragment, destination options, AH, ESP: RoCEv2 uses none of them.
    switch (p[6]) {
      case 0:
      case 43:
      case 44:
      case 50:
      case 51:
      case 60:
        return IpUdpError::UnsupportedIpHeader;
      default:
        return IpUdpError::NotUdp;
    }
  }
  v.family = IpFamily::V6;
  v.flow.family = IpFamily::V6;
  v.traffic_class = static_cast<std::uint8_t>((load_be16(p.data()) >> 4) & 0xFF);
  v.hop_limit = p[7];
  std::copy_n(p.data() + 8, 16, v.flow.src_ip.data());
  std::copy_n(p.data() + 24, 16, v.flow.dst_ip.data());
  v.ip_header = p.first(kIpv6HeaderSize);
  return parse_udp(p.subspan(kIpv6HeaderSize, payload_len), v);
}

}  // namespace

std::string_view ip_udp_error_name(IpUdpError error) noexcept {
  switch (error) {
    case IpUdpError::Ok:
      return "ok";
    case IpUdpError::Truncated:
      return "truncated";
    case IpUdpError::NotIp:
      return "not IP";
    case IpUdpError::BadIpHeader:
      return "bad IP header";
    case IpUdpError::UnsupportedIpHeader:
      return "IPv4 options or IPv6 extension headers";
    case IpUdpError::Fragment:
      return "IP fragment";
    case IpUdpError::NotUdp:
      return "not UDP";
    case IpUdpError::BadUdpLength:
      return "bad UDP length";
  }
  return "unknown";
}

IpUdpResult parse_ip_udp(std::span<const std::uint8_t> ip_packet) noexcept {
  IpUdpResult r;
  if (ip_packet.empty()) {
    r.error = IpUdpError::Truncated;
    return r;
  }
  switch (ip_packet[0] >> 4) {
    case 4:
      r.error = parse_v4(ip_packet, r.view);
      break;
    case 6:
      r.error = parse_v6(ip_packet, r.view);
      break;
    default:
      r.error = IpUdpError::NotIp;
      break;
  }
  return r;
}

}  // namespace vroce::wire
