// Per-frame classification and ICRC validation (see checker.h).
#include "checker.h"

#include <cstdio>

#include "link_layer.h"
#include "wire/byte_order.h"
#include "wire/icrc.h"
#include "wire/ip_udp.h"
#include "wire/packet.h"

namespace vroce::pcapcheck {
namespace {

using wire::kRoceUdpPort;
using wire::load_be16;

// For IP packets the parser could not read in full: is this a UDP datagram to port 4791?
bool looks_like_roce(std::span<const std::uint8_t> ip) {
  if (ip.empty()) {
    return false;
  }
  if ((ip[0] >> 4) == 4) {
    const std::size_t ihl = std::size_t{ip[0] & 0x0Fu} * 4;
    // Only a first fragment (offset 0) starts with the UDP header.
    return ihl >= 20 && ip.size() >= ihl + 4 && ip[9] == 17 &&
           (load_be16(ip.data() + 6) & 0x1FFF) == 0 &&
           load_be16(ip.data() + ihl + 2) == kRoceUdpPort;
  }
  if ((ip[0] >> 4) == 6) {
    return ip.size() >= 44 && ip[6] == 17 && load_be16(ip.data() + 42) == kRoceUdpPort;
  }
  return false;
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

void Checker::problem(Problem p) {
  if (summary_.problems.size() < max_problems_) {
    summary_.problems.push_back(std::move(p));
  } else {
    ++summary_.problems_omitted;
  }
}

Status Checker::add(const Frame& frame) {
  ++summary_.frames;
  summary_.link_types.insert(frame.link_type);
  if (!link_type_supported(frame.link_type)) {
    return failure("frame " + std::to_string(frame.number) + ": " +
                   link_type_name(frame.link_type) +
                   " is not supported (supported: Ethernet, Linux cooked SLL/SLL2, raw IP); "
                   "capture on an Ethernet or 'any' interface");
  }
  std::span<const std::uint8_t> ip;
  switch (ip_of_frame(frame.link_type, frame.data, &ip)) {
    case LinkResult::Ip:
      check_roce(frame, ip);
      break;
    case LinkResult::NotIp:
    case LinkResult::Truncated:
      ++summary_.non_ip;
      break;
  }
  return {};
}

void Checker::check_roce(const Frame& frame, std::span<const std::uint8_t> ip) {
  const wire::IpUdpResult parsed = wire::parse_ip_udp(ip);
  if (parsed.error != wire::IpUdpError::Ok) {
    if (!looks_like_roce(ip)) {
      ++summary_.other_ip;
      return;
    }
    ++summary_.roce;
    ++summary_.unverifiable;
    std::string why(wire::ip_udp_error_name(parsed.error));
    if (frame.data.size() < frame.original_length) {
      why = "captured " + std::to_string(frame.data.size()) + " of " +
            std::to_string(frame.original_length) + " bytes (snap length too small)";
    }
    problem({frame.number, "unverifiable", why, -1, 0, 0});
    return;
  }
  const wire::IpUdpView& v = parsed.view;
  if (v.flow.dst_port != kRoceUdpPort) {
    ++summary_.other_ip;
    return;
  }
  ++summary_.roce;
  ++(v.family == wire::IpFamily::V4 ? summary_.ipv4 : summary_.ipv6);
  ++summary_.traffic_classes[v.traffic_class];

  const auto payload = v.udp_payload;
  const int opcode = payload.empty() ? -1 : payload[0];
  if (opcode >= 0) {
    ++summary_.opcodes[opcode];
  }
  const std::uint32_t qp = payload.size() >= 8 ? wire::load_be24(payload.data() + 5) : 0;
  const std::uint32_t psn = payload.size() >= 12 ? wire::load_be24(payload.data() + 9) : 0;

  const auto computed = wire::icrc_compute_captured(v);
  if (!computed) {
    ++summary_.unverifiable;
    problem({frame.number, "unverifiable",
             "UDP payload of " + std::to_string(payload.size()) +
                 " bytes is too short for a BTH "
                 "and an ICRC",
             opcode, qp, psn});
    return;
  }
  const std::uint32_t stored = wire::icrc_stored(payload);
  if (*computed != stored) {
    ++summary_.invalid;
    problem({frame.number, "invalid ICRC",
             "stored " + hex32(stored) + ", computed " + hex32(*computed), opcode, qp, psn});
    return;
  }
  ++summary_.valid;
  wire::ParseOptions options;
  options.icrc = wire::IcrcPolicy::Skip;  // just checked, over the captured headers
  const auto r = wire::parse_packet(payload, options);
  if (!r.ok()) {
    ++summary_.structure_errors;
    problem(
        {frame.number, "structure", std::string(wire::parse_error_name(r.error)), opcode, qp, psn});
  }
}

}  // namespace vroce::pcapcheck
