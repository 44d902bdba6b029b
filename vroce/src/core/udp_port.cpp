#include "core/udp_port.h"

#include <arpa/inet.h>
#include <netinet/ip.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "util/log.h"

namespace vroce::transport {
namespace {

constexpr uint16_t kRocePort = 4791;

std::string address_text(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, buf, sizeof(buf));
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
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
                  std::string* message) {
  family_ = local.ss_family;
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
  for (size_t i = 0; i < kMaxBatch; ++i) {
    tx_msgs_[i].msg_hdr.msg_iov = &tx_iov_[i];
    tx_msgs_[i].msg_hdr.msg_iovlen = 1;
    rx_msgs_[i].msg_hdr.msg_iov = &rx_iov_[i];
    rx_msgs_[i].msg_hdr.msg_iovlen = 1;
  }
  return 0;
}

size_t UdpPort::send(const OutDatagram* datagrams, size_t count, size_t* refused) {
  *refused = 0;
  size_t done = 0;
  while (done < count) {
    size_t n = std::min(count - done, kMaxBatch);
    for (size_t i = 0; i < n; ++i) {
      const OutDatagram& d = datagrams[done + i];
      msghdr& h = tx_msgs_[i].msg_hdr;
      tx_iov_[i].iov_base = const_cast<uint8_t*>(d.data);
      tx_iov_[i].iov_len = d.length;
      h.msg_name = const_cast<sockaddr_storage*>(d.dst);
      h.msg_namelen = d.dst_len;
      h.msg_control = tx_control_[i];
      h.msg_controllen = CMSG_SPACE(sizeof(int)) * 2;
      cmsghdr* c = CMSG_FIRSTHDR(&h);
      int tclass = d.traffic_class;
      int hops = d.hop_limit;
      c->cmsg_level = family_ == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
      c->cmsg_type = family_ == AF_INET ? IP_TOS : IPV6_TCLASS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &tclass, sizeof(int));
      c = CMSG_NXTHDR(&h, c);
      c->cmsg_level = family_ == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
      c->cmsg_type = family_ == AF_INET ? IP_TTL : IPV6_HOPLIMIT;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &hops, sizeof(int));
    }
    int sent = ::sendmmsg(fd_, tx_msgs_, static_cast<unsigned>(n), 0);
    if (sent > 0) {
      done += static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) {
      continue;
    }
    // The first datagram of the batch was refused: count it as lost on the wire and go on.
    static std::atomic<bool> logged{false};  // shared by the engines of all devices
    if (!logged.exchange(true, std::memory_order_relaxed)) {
      VROCE_LOG(Warn, "sendmmsg refused a packet (%s); treating it as wire loss",
                std::strerror(errno));
    }
    ++*refused;
    ++done;
  }
  return count - *refused;
}

size_t UdpPort::receive(InDatagram* datagrams, size_t count) {
  count = std::min(count, kMaxBatch);
  for (size_t i = 0; i < count; ++i) {
    msghdr& h = rx_msgs_[i].msg_hdr;
    rx_iov_[i].iov_base = datagrams[i].data;
    rx_iov_[i].iov_len = datagrams[i].capacity;
    h.msg_name = &datagrams[i].src;
    h.msg_namelen = sizeof(sockaddr_storage);
    h.msg_control = rx_control_[i];
    h.msg_controllen = sizeof(rx_control_[i]);
    h.msg_flags = 0;
  }
  int got;
  do {
    got = ::recvmmsg(fd_, rx_msgs_, static_cast<unsigned>(count), MSG_DONTWAIT, nullptr);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) {
    return 0;
  }
  for (int i = 0; i < got; ++i) {
    InDatagram& d = datagrams[i];
    msghdr& h = rx_msgs_[i].msg_hdr;
    d.length = rx_msgs_[i].msg_len;
    d.truncated = (h.msg_flags & MSG_TRUNC) != 0;
    d.dst_known = false;
    d.traffic_class = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        in_pktinfo info;
        std::memcpy(&info, CMSG_DATA(c), sizeof(info));
        auto* dst = reinterpret_cast<sockaddr_in*>(&d.dst);
        *dst = sockaddr_in{};
        dst->sin_family = AF_INET;
        dst->sin_port = htons(kRocePort);
        dst->sin_addr = info.ipi_addr;
        d.dst_known = true;
      } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
        in6_pktinfo info;
        std::memcpy(&info, CMSG_DATA(c), sizeof(info));
        auto* dst = reinterpret_cast<sockaddr_in6*>(&d.dst);
        *dst = sockaddr_in6{};
        dst->sin6_family = AF_INET6;
        dst->sin6_port = htons(kRocePort);
        dst->sin6_addr = info.ipi6_addr;
        d.dst_known = true;
      } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
        d.traffic_class = *CMSG_DATA(c);  // one byte
      } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
        int tclass = 0;
        std::memcpy(&tclass, CMSG_DATA(c), sizeof(tclass));
        d.traffic_class = static_cast<uint8_t>(tclass);
      }
    }
  }
  return static_cast<size_t>(got);
}

}  // namespace vroce::transport
