// The UDP socket of one emulated device: bound to the device's address and port 4791,
// unconnected, DF set (IPv4 ID 0, so the ICRC is exact), traffic class and hop limit per packet
// through cmsgs, the destination address and traffic class of received packets through
// IP_PKTINFO and IP_RECVTOS (IPv6: IPV6_RECVPKTINFO, IPV6_RECVTCLASS). Sends and
// receives go in batches (sendmmsg/recvmmsg) over caller-owned buffers: no allocation per packet.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace vroce::transport {

// One outgoing datagram as the engine hands it to the socket.
struct OutDatagram {
  const uint8_t* data = nullptr;
  size_t length = 0;
  const sockaddr_storage* dst = nullptr;
  socklen_t dst_len = 0;
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
};

// One received datagram.
struct InDatagram {
  uint8_t* data = nullptr;  // the buffer the caller lent
  size_t capacity = 0;
  size_t length = 0;
  bool truncated = false;  // larger than capacity (MSG_TRUNC)
  sockaddr_storage src{};  // sender address and port
  sockaddr_storage dst{};  // our address the datagram was sent to (port 4791)
  bool dst_known = false;
  uint8_t traffic_class = 0;  // IPv4 TOS / IPv6 traffic class it arrived with (DSCP and ECN)
};

class UdpPort {
 public:
  static constexpr size_t kMaxBatch = 64;

  UdpPort() = default;
  UdpPort(const UdpPort&) = delete;
  UdpPort& operator=(const UdpPort&) = delete;
  ~UdpPort();

  // Opens and binds the socket. Returns 0, or an errno with *message saying what failed and
  // what to do (EADDRINUSE: another process owns this device).
  int open(const sockaddr_storage& local, const std::string& device_name, std::string* message);

  int fd() const noexcept { return fd_; }
  int family() const noexcept { return family_; }

  // Sends the datagrams in order; returns how many the kernel took. A datagram the kernel
  // refuses (an nft drop returns EPERM, an oversize one EMSGSIZE) is skipped and reported
  // through *refused (the count), as wire loss.
  size_t send(const OutDatagram* datagrams, size_t count, size_t* refused);

  // Receives up to `count` datagrams without blocking; returns how many (0 when none wait).
  size_t receive(InDatagram* datagrams, size_t count);

 private:
  int fd_ = -1;
  int family_ = AF_INET;
  // Per-batch scratch, reused: no allocation per packet.
  mmsghdr tx_msgs_[kMaxBatch]{};
  iovec tx_iov_[kMaxBatch]{};
  alignas(cmsghdr) uint8_t tx_control_[kMaxBatch][64]{};
  mmsghdr rx_msgs_[kMaxBatch]{};
  iovec rx_iov_[kMaxBatch]{};
  alignas(cmsghdr) uint8_t rx_control_[kMaxBatch][128]{};
};

}  // namespace vroce::transport
