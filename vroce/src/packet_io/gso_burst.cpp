// Forming UDP GSO bursts (see gso_burst.h).
#include "packet_io/gso_burst.h"

#include <cstring>

#include "wire/byte_order.h"
#include "wire/icrc.h"
#include "wire/opcode.h"
#include "wire/packet.h"

namespace vroce::packet_io {
namespace {

// A burst is one UDP datagram before the kernel splits it.
static_assert(wire::kMaxBurstSegments * wire::kMaxPacketSize <= 65507);

// CNPs never burst (every packet the engine built has a BTH).
bool is_cnp(const TxPacket& p) noexcept {
  return wire::opcode_traits(p.data[0]).kind == wire::OpKind::Cnp;
}

bool same_route(const TxPacket& a, const TxPacket& b) noexcept {
  return a.traffic_class == b.traffic_class && a.hop_limit == b.hop_limit &&
         a.dst_len == b.dst_len && (a.dst == b.dst || std::memcmp(a.dst, b.dst, a.dst_len) == 0);
}

}  // namespace

size_t GsoBursts::burst_length(std::span<const TxPacket> packets, size_t first) const {
  const TxPacket& head = packets[first];
  if (is_cnp(head)) {
    return 1;
  }
  size_t n = 1;
  while (first + n < packets.size() && n < wire::kMaxBurstSegments) {
    const TxPacket& p = packets[first + n];
    // Only the last segment may be shorter than the first.
    if (packets[first + n - 1].length != head.length || p.length > head.length ||
        !same_route(head, p) || is_cnp(p)) {
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
        if (ipv4 && j > 0) {
          // Segment j leaves with IPv4 ID j: its ICRC must be the one for that ID.
          uint8_t* icrc = p.data + p.length - wire::kIcrcSize;
          const auto id = static_cast<uint16_t>(j);
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

}  // namespace vroce::packet_io
