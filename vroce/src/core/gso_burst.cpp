// Forming UDP GSO bursts (see gso_burst.h).
#include "core/gso_burst.h"

#include <cstring>

#include "wire/byte_order.h"
#include "wire/headers.h"
#include "wire/icrc.h"
#include "wire/opcode.h"
#include "wire/packet.h"
#include "wire/psn.h"

namespace vroce::transport {
namespace {

// A burst is one UDP datagram before the kernel splits it.
static_assert(wire::kBurstPsnBlock * wire::kMaxPacketSize <= 65507);

// The BTH fields a burst is formed by (every packet the engine built has a BTH).
uint32_t dest_qp_of(const TxPacket& p) noexcept {
  return wire::bth_dest_qp(p.data);
}
uint32_t psn_of(const TxPacket& p) noexcept {
  return wire::bth_psn(p.data);
}
const wire::OpcodeTraits& traits_of(const TxPacket& p) noexcept {
  return wire::opcode_traits(p.data[0]);
}

bool same_route(const TxPacket& a, const TxPacket& b) noexcept {
  return a.traffic_class == b.traffic_class && a.hop_limit == b.hop_limit &&
         a.dst_len == b.dst_len && (a.dst == b.dst || std::memcmp(a.dst, b.dst, a.dst_len) == 0);
}

}  // namespace

size_t GsoBursts::burst_length(std::span<const TxPacket> packets, size_t first) const {
  const TxPacket& head = packets[first];
  const bool ipv4 = head.dst->ss_family == AF_INET;
  const wire::OpcodeTraits& traits = traits_of(head);
  if (traits.kind == wire::OpKind::Cnp || (ipv4 && wire::burst_ipv4_id(psn_of(head)) != 0)) {
    return 1;
  }
  size_t n = 1;
  while (first + n < packets.size() && n < wire::kBurstPsnBlock) {
    const TxPacket& p = packets[first + n];
    // Only the last segment may be shorter than the first.
    if (packets[first + n - 1].length != head.length || p.length > head.length ||
        !same_route(head, p) || traits_of(p).kind == wire::OpKind::Cnp) {
      break;
    }
    if (ipv4 && (dest_qp_of(p) != dest_qp_of(head) || traits_of(p).direction != traits.direction ||
                 psn_of(p) != wire::psn_add(psn_of(head), static_cast<int64_t>(n)))) {
      break;
    }
    ++n;
  }
  return n;
}

size_t GsoBursts::form(std::span<const TxPacket> packets, bool bursts, OutDatagram* out) {
  if (iov_.size() < packets.size()) {
    iov_.resize(packets.size());
  }
  size_t n = 0;
  for (size_t i = 0; i < packets.size();) {
    const TxPacket& head = packets[i];
    const size_t length = bursts ? burst_length(packets, i) : 1;
    OutDatagram& d = out[n++];
    d = OutDatagram{head.data,    head.length,        head.dst,
                    head.dst_len, head.traffic_class, head.hop_limit};
    if (length >= 2) {
      const bool ipv4 = head.dst->ss_family == AF_INET;
      for (size_t j = 0; j < length; ++j) {
        const TxPacket& p = packets[i + j];
        if (ipv4) {
          // Segment j leaves with IPv4 ID j = PSN % 8: its ICRC must be the one for that ID.
          uint8_t* icrc = p.data + p.length - wire::kIcrcSize;
          const uint16_t id = wire::burst_ipv4_id(psn_of(p));
          wire::store_le32(icrc, wire::load_le32(icrc) ^ wire::icrc_ipv4_id_delta(p.length, id));
        }
        iov_[i + j] = iovec{p.data, p.length};
      }
      d.segments = &iov_[i];
      d.segment_count = length;
      d.segment_size = static_cast<uint16_t>(head.length);
    }
    i += length;
  }
  return n;
}

}  // namespace vroce::transport
