// Forms UDP GSO bursts out of the engine's transmit batch. The kernel's cost is per datagram, so
// consecutive packets go out as one UDP_SEGMENT send of up to wire::kMaxBurstSegments (8)
// datagrams when they:
//   - go to the same address with the same traffic class and hop limit,
//   - are all of one length except the last, which may be shorter (what UDP GSO can carry),
//   - and none is a CNP.
// The kernel (or the NIC) gives segment j of a GSO send IPv4 ID j, and the ICRC covers the ID, so
// segment j's ICRC is patched here to the one for ID j (wire/icrc.h); receivers accept the ICRC
// for any ID below 8. Where a burst starts does not depend on the PSNs, so a QP's initial PSN
// does not change how its messages leave. IPv6 has no ID: its ICRCs stay as built. Everything
// else leaves as one datagram with ID 0, as without GSO. Used only without fault injection
// (faults are decided per packet).
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "packet_io/udp_port.h"

namespace vroce::packet_io {

// A built packet of the transmit batch: its bytes (whose ICRC forming a burst may patch) and
// where and how it goes.
struct TxPacket {
  uint8_t* data = nullptr;
  size_t length = 0;
  const sockaddr_storage* dst = nullptr;
  socklen_t dst_len = 0;
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
};

class GsoBursts {
 public:
  // Writes the messages that carry `packets`, in order, into `out` (room for packets.size()) and
  // returns how many: GSO sends where `bursts` (UdpPort::gso()) and the rules above allow, one
  // datagram per packet otherwise. The messages point into `packets` and into this object, valid
  // until the next call.
  size_t form(std::span<const TxPacket> packets, bool bursts, OutDatagram* out);

 private:
  // How many packets from `first` on form one burst (1: none).
  size_t burst_length(std::span<const TxPacket> packets, size_t first) const;

  std::vector<iovec> iov_;  // one per packet of the batch, grown once
};

}  // namespace vroce::packet_io
