// Link-layer framing of captured frames (see link_layer.h).
#include "link_layer.h"

#include "wire/byte_order.h"

namespace vroce::pcapcheck {
namespace {

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherIpv6 = 0x86DD;

bool is_ip_ethertype(std::uint16_t t) {
  return t == kEtherIpv4 || t == kEtherIpv6;
}

LinkResult after_header(std::span<const std::uint8_t> frame, std::size_t header,
                        std::uint16_t ethertype, std::span<const std::uint8_t>* ip) {
  if (!is_ip_ethertype(ethertype)) {
    return LinkResult::NotIp;
  }
  *ip = frame.subspan(header);
  return LinkResult::Ip;
}

}  // namespace

bool link_type_supported(std::uint32_t link_type) {
  switch (link_type) {
    case kLinkEthernet:
    case kLinkRaw:
    case kLinkLinuxSll:
    case kLinkIpv4:
    case kLinkIpv6:
    case kLinkLinuxSll2:
      return true;
    default:
      return false;
  }
}

std::string link_type_name(std::uint32_t link_type) {
  switch (link_type) {
    case kLinkEthernet:
      return "Ethernet";
    case kLinkRaw:
      return "raw IP";
    case kLinkLinuxSll:
      return "Linux cooked (SLL)";
    case kLinkIpv4:
      return "raw IPv4";
    case kLinkIpv6:
      return "raw IPv6";
    case kLinkLinuxSll2:
      return "Linux cooked v2 (SLL2)";
    default:
      return "link type " + std::to_string(link_type);
  }
}

LinkResult ip_of_frame(std::uint32_t link_type, std::span<const std::uint8_t> frame,
                       std::span<const std::uint8_t>* ip) {
  using wire::load_be16;
  switch (link_type) {
    case kLinkEthernet: {
      std::size_t off = 12;
      for (int tags = 0;; ++tags) {
        if (frame.size() < off + 2) {
          return LinkResult::Truncated;
        }
        const std::uint16_t type = load_be16(frame.data() + off);
        if ((type == 0x8100 || type == 0x88A8 || type == 0x9100) && tags < 2) {
          off += 4;
          continue;
        }
        return after_header(frame, off + 2, type, ip);
      }
    }
    case kLinkLinuxSll:
      if (frame.size() < 16) {
        return LinkResult::Truncated;
      }
      return after_header(frame, 16, load_be16(frame.data() + 14), ip);
    case kLinkLinuxSll2:
      if (frame.size() < 20) {
        return LinkResult::Truncated;
      }
      return after_header(frame, 20, load_be16(frame.data()), ip);
    case kLinkRaw:
    case kLinkIpv4:
    case kLinkIpv6:
      *ip = frame;
      return LinkResult::Ip;
    default:
      return LinkResult::NotIp;
  }
}

}  // namespace vroce::pcapcheck
