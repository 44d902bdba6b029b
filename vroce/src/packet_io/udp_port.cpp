#include "packet_io/udp_port.h"

#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "packet_io/socket_address.h"
#include "stats/stats.h"
#include "util/log.h"

namespace vroce::packet_io {
namespace {

constexpr uint16_t kRocePort = 4791;
// A coalesced (UDP_GRO) buffer holds at most one IP datagram's worth.
constexpr size_t kGroBufferSize = 65536;

// Writes one control message at `at` (aligned for cmsghdr) and returns where the next one goes.
uint8_t* put_cmsg(uint8_t* at, int level, int type, const void* data, size_t length) {
  cmsghdr c{};
  c.cmsg_level = level;
  c.cmsg_type = type;
  c.cmsg_len = CMSG_LEN(length);
  std::memcpy(at, &c, sizeof(c));
  std::memcpy(at + CMSG_LEN(0), data, length);
  return at + CMSG_SPACE(length);
}

int set_int(int fd, int level, int name, int value) {
  return ::setsockopt(fd, level, name, &value, sizeof(value));
}

// Large buffers: a window of full-MTU packets must fit in the receiver's queue or it drops them
// (loopback delivers synchronously into it). Root may exceed rmem_max; others get what they get.
void size_buffers(int fd) {
  constexpr int kReceive = 32 << 20;
  constexpr int kSend = 8 << 20;
  if (set_int(fd, SOL_SOCKET, SO_RCVBUFFORCE, kReceive) != 0) {
    set_int(fd, SOL_SOCKET, SO_RCVBUF, kReceive);
  }
  if (set_int(fd, SOL_SOCKET, SO_SNDBUFFORCE, kSend) != 0) {
    set_int(fd, SOL_SOCKET, SO_SNDBUF, kSend);
  }
}

}  // namespace

UdpPort::~UdpPort() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

int UdpPort::open(const sockaddr_storage& local, const std::string& device_name,
                  const Options& options, std::string* message) {
  family_ = local.ss_family;
  device_name_ = device_name;
  max_datagram_ = options.max_datagram;
  if (family_ != AF_INET && family_ != AF_INET6) {
    *message = "device " + device_name + " has no IPv4 or IPv6 address to bind";
    return EINVAL;
  }
  fd_ = ::socket(family_, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
  if (fd_ < 0) {
    int err = errno;
    *message = "socket(): " + std::string(std::strerror(err));
    return err;
  }
  int rc = 0;
  if (family_ == AF_INET) {
    rc |= set_int(fd_, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
    rc |= set_int(fd_, IPPROTO_IP, IP_PKTINFO, 1);
    rc |= set_int(fd_, IPPROTO_IP, IP_RECVTOS, 1);  // the ECN bits of what arrives
  } else {
    rc |= set_int(fd_, IPPROTO_IPV6, IPV6_V6ONLY, 1);
    rc |= set_int(fd_, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO);
    rc |= set_int(fd_, IPPROTO_IPV6, IPV6_DONTFRAG, 1);
    rc |= set_int(fd_, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
    rc |= set_int(fd_, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
  }
  if (rc != 0) {
    int err = errno;
    *message = "setsockopt on the UDP socket: " + std::string(std::strerror(err));
    return err;
  }
  size_buffers(fd_);
  sockaddr_storage bind_addr = local;
  socklen_t len;
  if (family_ == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&bind_addr)->sin_port = htons(kRocePort);
    len = sizeof(sockaddr_in);
  } else {
    reinterpret_cast<sockaddr_in6*>(&bind_addr)->sin6_port = htons(kRocePort);
    len = sizeof(sockaddr_in6);
  }
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&bind_addr), len) != 0) {
    int err = errno;
    std::string where = address_text(local) + ":4791";
    if (err == EADDRINUSE) {
      *message = "device " + device_name + ": UDP " + where +
                 " is already bound by another process; a vroce device belongs to one process "
                 "at a time, so give each process its own device (e.g. "
                 "VROCE_DEVICES=vroceA=127.0.3.1 in one and vroceB=127.0.3.2 in the other, or "
                 "one network namespace per process)";
    } else if (err == EADDRNOTAVAIL) {
      *message = "device " + device_name + ": cannot bind " + where +
                 ": the address is not configured on any interface of this network namespace";
    } else {
      *message = "device " + device_name + ": bind " + where + ": " + std::strerror(err);
    }
    ::close(fd_);
    fd_ = -1;
    return err;
  }
  probe_offloads(options.offloads);
  rx_buffer_size_ = gro_ ? kGroBufferSize : max_datagram_;
  rx_buffers_.resize(kMaxBatch * rx_buffer_size_);
  for (size_t i = 0; i < kMaxBatch; ++i) {
    tx_msgs_[i].msg_hdr.msg_iov = &tx_iov_[i];
    tx_msgs_[i].msg_hdr.msg_iovlen = 1;
    rx_msgs_[i].msg_hdr.msg_iov = &rx_iov_[i];
    rx_msgs_[i].msg_hdr.msg_iovlen = 1;
    rx_iov_[i].iov_base = rx_buffers_.data() + i * rx_buffer_size_;
    rx_iov_[i].iov_len = rx_buffer_size_;
  }
  return 0;
}

void UdpPort::probe_offloads(bool offloads) {
  if (!offloads) {
    return;  // VROCE_GSO=0
  }
  // UDP_SEGMENT set to 0 is the socket's default segment size, i.e. none: each GSO send names
  // its own in a cmsg. Accepted, it says the kernel has UDP GSO.
  std::string refused;
  gso_ = set_int(fd_, SOL_UDP, UDP_SEGMENT, 0) == 0;
  if (!gso_) {
    refused = "UDP_SEGMENT (" + std::string(std::strerror(errno)) + ")";
  }
  gro_ = set_int(fd_, SOL_UDP, UDP_GRO, 1) == 0;
  if (!gro_) {
    refused +=
        std::string(refused.empty() ? "" : " and ") + "UDP_GRO (" + std::strerror(errno) + ")";
  }
  if (!refused.empty()) {
    VROCE_LOG(Info,
              "device %s: the kernel refuses %s: %s one datagram per packet, as with VROCE_GSO=0 "
              "(slower; the packets on the wire are the same)",
              device_name_.c_str(), refused.c_str(),
              gso_ ? "receiving" : (gro_ ? "sending" : "sending and receiving"));
  }
}

void UdpPort::gso_refused(int error) {
  gso_ = false;
  VROCE_LOG(Info,
            "device %s: the kernel refused a UDP GSO send (%s); sending one datagram per packet "
            "from now on, as with VROCE_GSO=0 (the burst is lost and retransmitted)",
            device_name_.c_str(), std::strerror(error));
}

size_t UdpPort::send(const OutDatagram* datagrams, size_t count, size_t* refused) {
  *refused = 0;
  size_t taken = 0;
  size_t done = 0;
  auto datagrams_in = [](const OutDatagram& d) {
    return d.segment_count >= 2 ? d.segment_count : size_t{1};
  };
  while (done < count) {
    size_t n = std::min(count - done, kMaxBatch);
    for (size_t i = 0; i < n; ++i) {
      const OutDatagram& d = datagrams[done + i];
      msghdr& h = tx_msgs_[i].msg_hdr;
      const bool burst = d.segment_count >= 2;
      if (burst) {
        h.msg_iov = const_cast<iovec*>(d.segments);
        h.msg_iovlen = d.segment_count;
      } else {
        tx_iov_[i].iov_base = const_cast<uint8_t*>(d.data);
        tx_iov_[i].iov_len = d.length;
        h.msg_iov = &tx_iov_[i];
        h.msg_iovlen = 1;
      }
      h.msg_name = const_cast<sockaddr_storage*>(d.dst);
      h.msg_namelen = d.dst_len;
      // Traffic class and hop limit, and for a GSO send its segment size, laid out back to back
      // as CMSG_NXTHDR would walk them.
      const int tclass = d.traffic_class;
      const int hops = d.hop_limit;
      const int ip_level = family_ == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
      uint8_t* at = tx_control_[i];
      at = put_cmsg(at, ip_level, family_ == AF_INET ? IP_TOS : IPV6_TCLASS, &tclass, sizeof(int));
      at = put_cmsg(at, ip_level, family_ == AF_INET ? IP_TTL : IPV6_HOPLIMIT, &hops, sizeof(int));
      if (burst) {
        at = put_cmsg(at, SOL_UDP, UDP_SEGMENT, &d.segment_size, sizeof(uint16_t));
      }
      h.msg_control = tx_control_[i];
      h.msg_controllen = static_cast<size_t>(at - tx_control_[i]);
    }
    int sent = ::sendmmsg(fd_, tx_msgs_, static_cast<unsigned>(n), 0);
    if (sent > 0) {
      for (int i = 0; i < sent; ++i) {
        const OutDatagram& d = datagrams[done + static_cast<size_t>(i)];
        taken += datagrams_in(d);
        if (d.segment_count >= 2) {
          stats().gso_sends.add();
          stats().gso_segments.add(d.segment_count);
        }
      }
      done += static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) {
      continue;
    }
    // The first message of the batch was refused: count its datagrams as lost on the wire and
    // go on.
    const int error = errno;
    const OutDatagram& d = datagrams[done];
    // What only a GSO send meets (udp_send_skb): EINVAL when the route's MTU is below the
    // segment or the segment count too high, EIO when the route cannot segment (IPsec).
    const bool gso_only = d.segment_count >= 2 && (error == EINVAL || error == EIO);
    if (gso_only) {
      if (gso_) {
        gso_refused(error);
      }
    } else {
      static std::atomic<bool> logged{false};  // shared by the engines of all devices
      if (!logged.exchange(true, std::memory_order_relaxed)) {
        VROCE_LOG(Warn, "sendmmsg refused a packet (%s); treating it as wire loss",
                  std::strerror(error));
      }
    }
    *refused += datagrams_in(d);
    ++done;
    // With GSO off, the batch's later GSO sends are lost too (their ICRCs were patched for the
    // IDs of a burst): RC retransmits them as plain datagrams.
    while (!gso_ && done < count && datagrams[done].segment_count >= 2) {
      *refused += datagrams[done].segment_count;
      ++done;
    }
  }
  return taken;
}

size_t UdpPort::receive(std::span<InDatagram> out) {
  size_t n = 0;
  while (n < out.size()) {
    if (rx_next_ == rx_got_) {
      if (n > 0) {
        break;  // what this call handed out lives in the buffers the next batch would reuse
      }
      rx_got_ = rx_next_ = rx_offset_ = 0;
      rx_full_ = false;
      for (size_t i = 0; i < rx_dirty_; ++i) {
        msghdr& h = rx_msgs_[i].msg_hdr;
        h.msg_name = &rx_meta_[i].src;
        h.msg_namelen = sizeof(sockaddr_storage);
        h.msg_control = rx_control_[i];
        h.msg_controllen = sizeof(rx_control_[i]);
        h.msg_flags = 0;
      }
      int got;
      do {
        got = ::recvmmsg(fd_, rx_msgs_, static_cast<unsigned>(kMaxBatch), MSG_DONTWAIT, nullptr);
      } while (got < 0 && errno == EINTR);
      // A failed call writes none of the headers; the first is reset anyway, to stay safe
      // should a kernel ever leave it half written.
      rx_dirty_ = got > 0 ? static_cast<size_t>(got) : 1;
      if (got <= 0) {
        break;
      }
      rx_got_ = static_cast<size_t>(got);
      rx_full_ = rx_got_ == kMaxBatch;  // a full batch may have left more in the socket
      for (size_t i = 0; i < rx_got_; ++i) {
        parse_received(i);
      }
    }
    // Hand out the next datagram of buffer rx_next_: all of it, or its next GRO segment.
    const RxMessage& m = rx_meta_[rx_next_];
    const mmsghdr& msg = rx_msgs_[rx_next_];
    const size_t length = msg.msg_len;
    const size_t segment = m.segment_size > 0 ? m.segment_size : length;
    InDatagram& d = out[n++];
    d.data = static_cast<uint8_t*>(rx_iov_[rx_next_].iov_base) + rx_offset_;
    d.length = std::min(segment, length - rx_offset_);
    const bool cut = (msg.msg_hdr.msg_flags & MSG_TRUNC) != 0;  // larger than the buffer
    d.truncated = cut || d.length > max_datagram_;
    d.src = &m.src;
    d.dst = &m.dst;
    d.dst_known = m.dst_known;
    d.traffic_class = m.traffic_class;
    rx_offset_ += d.length;
    if (rx_offset_ >= length || cut) {
      ++rx_next_;
      rx_offset_ = 0;
    }
  }
  return n;
}

void UdpPort::parse_received(size_t index) {
  RxMessage& m = rx_meta_[index];
  msghdr& h = rx_msgs_[index].msg_hdr;
  m.dst_known = false;
  m.traffic_class = 0;
  m.segment_size = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      auto* dst = reinterpret_cast<sockaddr_in*>(&m.dst);
      *dst = sockaddr_in{};
      dst->sin_family = AF_INET;
      dst->sin_port = htons(kRocePort);
      dst->sin_addr = info.ipi_addr;
      m.dst_known = true;
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
      in6_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      auto* dst = reinterpret_cast<sockaddr_in6*>(&m.dst);
      *dst = sockaddr_in6{};
      dst->sin6_family = AF_INET6;
      dst->sin6_port = htons(kRocePort);
      dst->sin6_addr = info.ipi6_addr;
      m.dst_known = true;
    } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
      m.traffic_class = *CMSG_DATA(c);  // one byte
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
      int tclass = 0;
      std::memcpy(&tclass, CMSG_DATA(c), sizeof(tclass));
      m.traffic_class = static_cast<uint8_t>(tclass);
    } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
      int segment = 0;
      std::memcpy(&segment, CMSG_DATA(c), sizeof(segment));
      m.segment_size = segment > 0 ? static_cast<size_t>(segment) : 0;
    }
  }
  const size_t length = rx_msgs_[index].msg_len;
  if (m.segment_size > 0 && m.segment_size < length) {
    stats().gro_buffers.add();
    stats().gro_segments.add((length + m.segment_size - 1) / m.segment_size);
  } else {
    m.segment_size = 0;
  }
}

}  // namespace vroce::packet_io
