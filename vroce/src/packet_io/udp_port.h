// The UDP socket of one emulated device: bound to the device's address and port 4791,
// unconnected, DF set (IPv4 ID 0, or j for segment j of a GSO burst: the ICRC is exact either way,
// see packet_io/gso_burst.h), traffic class and hop limit per packet through cmsgs, the destination
// address and traffic class of received packets through
// IP_PKTINFO and IP_RECVTOS (IPv6: IPV6_RECVPKTINFO, IPV6_RECVTCLASS). Sends and
// receives go in batches (sendmmsg/recvmmsg) over preallocated buffers: no allocation per packet.
//
// Kernel offloads, unless VROCE_GSO=0: a message of a batch may be a UDP GSO send (a UDP_SEGMENT
// cmsg: several packets of one size, the last maybe shorter, that the kernel or the NIC splits
// into datagrams; packet_io/gso_burst.h forms them), and the socket has UDP_GRO on, so the kernel
// may hand over several datagrams of one flow in one buffer, which receive() splits again. Both are
// probed when the socket opens; a kernel that refuses one gets one Info line and the plain path.
// The datagrams on the wire are the same either way: this is a speed choice, not a fidelity one.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vroce::packet_io {

// One outgoing message as the engine hands it to the socket: one datagram (data, length), or a
// UDP GSO send of segment_count datagrams.
struct OutDatagram {
  const uint8_t* data = nullptr;
  size_t length = 0;
  const sockaddr_storage* dst = nullptr;
  socklen_t dst_len = 0;
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
  // A GSO send (segment_count >= 2; data and length unused): one buffer per datagram, each
  // segment_size bytes except the last, which may be shorter.
  const iovec* segments = nullptr;
  size_t segment_count = 0;
  uint16_t segment_size = 0;
};

// One received datagram.
struct InDatagram {
  uint8_t* data = nullptr;  // in the port's buffers, valid until the next receive()
  size_t length = 0;
  bool truncated = false;  // larger than the port's largest datagram
  // Sender address and port, and our address the datagram was sent to (port 4791): in the
  // port's per-buffer records, valid until the next receive() like `data`.
  const sockaddr_storage* src = nullptr;
  const sockaddr_storage* dst = nullptr;
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

  struct Options {
    size_t max_datagram = 0;  // a larger datagram is received as truncated
    bool offloads = true;     // VROCE_GSO: use UDP GSO and GRO where the kernel has them
  };

  // Opens and binds the socket. Returns 0, or an errno with *message saying what failed and
  // what to do (EADDRINUSE: another process owns this device).
  int open(const sockaddr_storage& local, const std::string& device_name, const Options& options,
           std::string* message);

  int fd() const noexcept { return fd_; }
  int family() const noexcept { return family_; }
  // GSO sends are possible: offloads asked for, the kernel took UDP_SEGMENT, and no GSO send
  // has been refused since.
  bool gso() const noexcept { return gso_; }

  // Sends the messages in order; returns how many datagrams the kernel took. A message the
  // kernel refuses (an nft drop returns EPERM, an oversize one EMSGSIZE) is skipped and its
  // datagrams reported through *refused (the count), as wire loss. A refused GSO send that a
  // plain one would not have met (EIO, EINVAL: the route cannot segment) turns GSO off for
  // good, with one Info line; the rest of that batch's GSO sends are lost with it.
  size_t send(const OutDatagram* datagrams, size_t count, size_t* refused);

  // Receives without blocking into `out`: datagrams left from the last batch (kMaxBatch
  // buffers) if any, else a new batch, a coalesced buffer split into its datagrams; what does
  // not fit in `out` is handed out by the next call. Returns how many (0 when none wait).
  size_t receive(std::span<InDatagram> out);
  // The last receive() may have left datagrams behind: it read a full batch, or a coalesced
  // buffer did not fit in `out`.
  bool more_waiting() const noexcept { return rx_next_ < rx_got_ || rx_full_; }

 private:
  // What one received buffer carried besides its bytes.
  struct RxMessage {
    sockaddr_storage src{};
    sockaddr_storage dst{};
    bool dst_known = false;
    uint8_t traffic_class = 0;
    size_t segment_size = 0;  // UDP_GRO's segment size; 0 when not coalesced
  };
  void probe_offloads(bool offloads);
  void parse_received(size_t index);
  void gso_refused(int error);

  int fd_ = -1;
  int family_ = AF_INET;
  std::string device_name_;
  bool gso_ = false;
  bool gro_ = false;
  size_t max_datagram_ = 0;
  // Per-batch scratch, reused: no allocation per packet.
  mmsghdr tx_msgs_[kMaxBatch]{};
  iovec tx_iov_[kMaxBatch]{};
  alignas(cmsghdr) uint8_t tx_control_[kMaxBatch][96]{};
  mmsghdr rx_msgs_[kMaxBatch]{};
  iovec rx_iov_[kMaxBatch]{};
  alignas(cmsghdr) uint8_t rx_control_[kMaxBatch][128]{};
  RxMessage rx_meta_[kMaxBatch]{};
  std::vector<uint8_t> rx_buffers_;  // kMaxBatch buffers of rx_buffer_size_ (64 KiB with GRO)
  size_t rx_buffer_size_ = 0;
  // The last batch: buffers read, the next one to hand out and how far into it.
  size_t rx_got_ = 0;
  size_t rx_next_ = 0;
  size_t rx_offset_ = 0;
  bool rx_full_ = false;
  // How many of rx_msgs_ (from the first) the last recvmmsg may have written to (msg_namelen,
  // msg_controllen, msg_flags): only those are reset before the next one, not all kMaxBatch,
  // which cost ~780 instructions per call, most of them on polls that find nothing.
  size_t rx_dirty_ = kMaxBatch;
};

}  // namespace vroce::packet_io
