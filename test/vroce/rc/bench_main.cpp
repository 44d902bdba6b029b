// vroce_rc_bench: vroce's loopback performance next to the plain UDP-socket floor, measured in
// the same run. Two processes (this one and a forked responder), one RC QP each on its own vroce
// device (the process's first two test addresses), path MTU 4096:
//   - RDMA WRITE bandwidth for 4 KiB .. 64 MiB messages (a few in flight), against a UDP stream
//     of 4096-byte datagrams between two sockets (sendmmsg/recvmmsg, what vroce itself uses);
//   - 8-byte RDMA WRITE WITH IMMEDIATE ping-pong round trips (busy-polling the CQ), against a
//     UDP ping-pong of datagrams of the same size on the wire (busy-polling recv).
// Prints one table with ratios. Not a timed test: the last WRITE of each size is read back and
// compared, so a broken transfer fails the run, but no speed is asserted.
//
//   vroce_rc_bench [--quick]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hang_bound.h"
#include "harness.h"
#include "test_addresses.h"

using namespace vroce_test;
using Clock = std::chrono::steady_clock;

namespace {

constexpr unsigned kRemote =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
constexpr uint64_t kMaxSize = 64ull << 20;
constexpr uint16_t kUdpPortA = 47911;
constexpr uint16_t kUdpPortB = 47912;
// A RoCEv2 WRITE_ONLY_IMM with 8 bytes: BTH 12 + RETH 16 + ImmDt 4 + 8 + ICRC 4.
constexpr size_t kPingBytes = 44;
constexpr size_t kDatagram = 4096 + 16;  // a full-MTU RoCE packet's UDP payload, roughly

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "vroce_rc_bench: %s\n", what.c_str());
  std::exit(1);
}

void xfer(int fd, void* data, size_t n, bool send) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    ssize_t r = send ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (r <= 0) {
      die("control socket closed");
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
}

template <class T>
void put(int fd, const T& v) {
  xfer(fd, const_cast<T*>(&v), sizeof(T), true);
}
template <class T>
T get(int fd) {
  T v;
  xfer(fd, &v, sizeof(T), false);
  return v;
}

int udp_socket(const char* ip, uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int big = 32 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    die(std::string("bind UDP ") + ip + ": " + std::strerror(errno));
  }
  return fd;
}

sockaddr_in udp_peer(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

// ---- the responder (forked child) ------------------------------------------------------------

int responder(int ctl, int pings) {
  Device dev("vrBenchB");
  Buffer exposed(dev.pd, kMaxSize, kRemote);
  QpOptions o;
  o.max_recv_wr = 64;
  Endpoint ep(dev, o);
  PeerInfo mine = ep.info();
  mine.addr = exposed.addr();
  mine.rkey = exposed.mr->rkey;
  put(ctl, mine);
  PeerInfo remote = get<PeerInfo>(ctl);
  ep.connect(remote);
  for (int i = 0; i < 32; ++i) {
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    ibv_recv_wr* bad = nullptr;
    ibv_post_recv(ep.qp, &wr, &bad);
  }
  put<int>(ctl, 1);
  // Ping-pong: answer each WRITE_WITH_IMM with one.
  (void)get<int>(ctl);
  ibv_sge sg = exposed.sge(0, 8);
  for (int i = 0; i < pings; ++i) {
    ibv_wc wc;
    while (ibv_poll_cq(ep.recv_cq, 1, &wc) == 0) {
    }
    ibv_recv_wr wr{};
    wr.wr_id = wc.wr_id;
    ibv_recv_wr* rbad = nullptr;
    ibv_post_recv(ep.qp, &wr, &rbad);
    ibv_send_wr s{};
    s.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    s.sg_list = &sg;
    s.num_sge = 1;
    s.send_flags = IBV_SEND_INLINE | ((i % 16) == 15 ? IBV_SEND_SIGNALED : 0);
    s.wr.rdma.remote_addr = remote.addr;
    s.wr.rdma.rkey = remote.rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(ep.qp, &s, &bad) != 0) {
      die("responder post failed");
    }
    if ((i % 16) == 15) {
      while (ibv_poll_cq(ep.send_cq, 1, &wc) == 0) {
      }
    }
  }
  // UDP ping-pong peer.
  (void)get<int>(ctl);
  int fd = udp_socket(roce::test::test_address(1).c_str(), kUdpPortB);
  put<int>(ctl, 1);
  sockaddr_in to = udp_peer(roce::test::test_address(0).c_str(), kUdpPortA);
  char buf[kDatagram];
  for (int i = 0; i < pings; ++i) {
    while (::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0) {
    }
    ::sendto(fd, buf, kPingBytes, 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
  }
  // UDP stream sink: count bytes until told to stop.
  for (;;) {
    int size = get<int>(ctl);
    if (size == 0) {
      break;
    }
    uint64_t want = static_cast<uint64_t>(get<int64_t>(ctl));
    put<int>(ctl, 1);
    uint64_t got = 0;
    auto start = Clock::now();
    Clock::time_point last = start;
    mmsghdr msgs[64];
    iovec iov[64];
    static char bufs[64][kDatagram];
    for (int i = 0; i < 64; ++i) {
      iov[i] = iovec{bufs[i], kDatagram};
      msgs[i] = mmsghdr{};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    while (got < want) {
      // recvmmsg's own timeout is only looked at between datagrams; wait with poll instead.
      pollfd pfd{fd, POLLIN, 0};
      int ready = ::poll(&pfd, 1, 200);
      int n = ready > 0 ? ::recvmmsg(fd, msgs, 64, MSG_DONTWAIT, nullptr) : 0;
      if (n <= 0) {
        if (std::chrono::duration<double>(Clock::now() - last).count() > 0.5) {
          break;  // the sender is done; the rest were dropped by the kernel
        }
        continue;
      }
      for (int i = 0; i < n; ++i) {
        got += msgs[i].msg_len;
      }
      last = Clock::now();
    }
    double secs = std::chrono::duration<double>(last - start).count();
    put<uint64_t>(ctl, got);
    put<double>(ctl, secs);
  }
  ::close(fd);
  put<int>(ctl, 1);
  (void)get<int>(ctl);
  return 0;
}

// ---- the requester -----------------------------------------------------------------------

struct Row {
  uint64_t size;
  double vroce_gbps;
  double udp_gbps;
};

double write_bandwidth(Endpoint& ep, Buffer& src, Buffer& back, const PeerInfo& remote,
                       uint64_t size, uint64_t total) {
  uint64_t count = std::max<uint64_t>(total / size, 4);
  int depth = size <= (1 << 20) ? 8 : 2;
  fill_pattern(src.data, size, size);
  ibv_sge sg = src.sge(0, size);
  auto start = Clock::now();
  uint64_t posted = 0, done = 0;
  int inflight = 0;
  while (done < count) {
    while (posted < count && inflight < depth) {
      ibv_send_wr wr{};
      wr.wr_id = posted;
      wr.opcode = IBV_WR_RDMA_WRITE;
      wr.sg_list = &sg;
      wr.num_sge = 1;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = remote.addr;
      wr.wr.rdma.rkey = remote.rkey;
      ibv_send_wr* bad = nullptr;
      if (ibv_post_send(ep.qp, &wr, &bad) != 0) {
        die("post WRITE failed");
      }
      ++posted;
      ++inflight;
    }
    ibv_wc wc[8];
    int n = ibv_poll_cq(ep.send_cq, 8, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        die(std::string("WRITE failed: ") + ibv_wc_status_str(wc[i].status));
      }
    }
    done += static_cast<uint64_t>(n);
    inflight -= n;
  }
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  // Read the last one back: a benchmark of a broken transfer is worthless.
  std::memset(back.data, 0, size);
  ibv_sge rs = back.sge(0, size);
  ibv_send_wr rd{};
  rd.opcode = IBV_WR_RDMA_READ;
  rd.sg_list = &rs;
  rd.num_sge = 1;
  rd.send_flags = IBV_SEND_SIGNALED;
  rd.wr.rdma.remote_addr = remote.addr;
  rd.wr.rdma.rkey = remote.rkey;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(ep.qp, &rd, &bad) != 0) {
    die("post READ failed");
  }
  auto wcs = wait_completions(ep.send_cq, 1, roce::test::kHangBound);
  if (wcs.size() != 1 || wcs[0].status != IBV_WC_SUCCESS ||
      find_mismatch(back.data, size, size) != -1) {
    die("the data read back differs from what was written");
  }
  return static_cast<double>(size * count) / secs / 1e9;
}

double udp_stream(int fd, int ctl, uint64_t size, uint64_t total) {
  uint64_t count = std::max<uint64_t>(total / size, 4);
  uint64_t datagrams = count * ((size + 4095) / 4096);
  put<int>(ctl, static_cast<int>(std::min<uint64_t>(size, 1 << 30)));
  put<int64_t>(ctl, static_cast<int64_t>(datagrams * kDatagram));
  (void)get<int>(ctl);
  sockaddr_in to = udp_peer(roce::test::test_address(1).c_str(), kUdpPortB);
  static char buf[kDatagram];
  mmsghdr msgs[64];
  iovec iov[64];
  for (int i = 0; i < 64; ++i) {
    iov[i] = iovec{buf, kDatagram};
    msgs[i] = mmsghdr{};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_name = &to;
    msgs[i].msg_hdr.msg_namelen = sizeof(to);
  }
  uint64_t sent = 0;
  while (sent < datagrams) {
    unsigned n = static_cast<unsigned>(std::min<uint64_t>(64, datagrams - sent));
    int r = ::sendmmsg(fd, msgs, n, 0);
    if (r > 0) {
      sent += static_cast<uint64_t>(r);
    }
  }
  uint64_t got = get<uint64_t>(ctl);
  double secs = get<double>(ctl);
  return secs > 0 ? static_cast<double>(got) / secs / 1e9 : 0;
}

int requester(int ctl, bool quick) {
  int pings = quick ? 2000 : 20000;
  uint64_t total = quick ? (64ull << 20) : (512ull << 20);
  Device dev("vrBenchA");
  Buffer src(dev.pd, kMaxSize, kRemote);
  Buffer back(dev.pd, kMaxSize, kRemote);
  QpOptions o;
  o.max_recv_wr = 64;
  Endpoint ep(dev, o);
  PeerInfo mine = ep.info();
  mine.addr = src.addr();
  mine.rkey = src.mr->rkey;
  PeerInfo remote = get<PeerInfo>(ctl);
  put(ctl, mine);
  ep.connect(remote);
  for (int i = 0; i < 32; ++i) {
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    ibv_recv_wr* bad = nullptr;
    ibv_post_recv(ep.qp, &wr, &bad);
  }
  (void)get<int>(ctl);

  std::vector<Row> rows;
  for (uint64_t size = 4096; size <= kMaxSize; size *= 4) {
    rows.push_back({size, write_bandwidth(ep, src, back, remote, size, total), 0});
  }
  std::string after_writes = stats_json();

  // vroce ping-pong.
  put<int>(ctl, 1);
  std::vector<double> vroce_rtt;
  ibv_sge sg = src.sge(0, 8);
  for (int i = 0; i < pings; ++i) {
    auto t0 = Clock::now();
    ibv_send_wr s{};
    s.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    s.sg_list = &sg;
    s.num_sge = 1;
    s.send_flags = IBV_SEND_INLINE | ((i % 16) == 15 ? IBV_SEND_SIGNALED : 0);
    s.wr.rdma.remote_addr = remote.addr;
    s.wr.rdma.rkey = remote.rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(ep.qp, &s, &bad) != 0) {
      die("post failed");
    }
    ibv_wc wc;
    while (ibv_poll_cq(ep.recv_cq, 1, &wc) == 0) {
    }
    vroce_rtt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (wc.status != IBV_WC_SUCCESS) {
      die("ping-pong receive failed");
    }
    ibv_recv_wr wr{};
    wr.wr_id = wc.wr_id;
    ibv_recv_wr* rbad = nullptr;
    ibv_post_recv(ep.qp, &wr, &rbad);
    if ((i % 16) == 15) {
      while (ibv_poll_cq(ep.send_cq, 1, &wc) == 0) {
      }
    }
  }

  // UDP ping-pong.
  int fd = udp_socket(roce::test::test_address(0).c_str(), kUdpPortA);
  put<int>(ctl, 1);
  (void)get<int>(ctl);
  sockaddr_in to = udp_peer(roce::test::test_address(1).c_str(), kUdpPortB);
  std::vector<double> udp_rtt;
  char buf[kDatagram] = {};
  for (int i = 0; i < pings; ++i) {
    auto t0 = Clock::now();
    ::sendto(fd, buf, kPingBytes, 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
    while (::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0) {
    }
    udp_rtt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  for (Row& row : rows) {
    row.udp_gbps = udp_stream(fd, ctl, row.size, total);
  }
  put<int>(ctl, 0);
  (void)get<int>(ctl);
  ::close(fd);

  std::printf("vroce loopback benchmark (one RC QP, path MTU 4096, two processes)\n\n");
  std::printf("RDMA WRITE bandwidth          vroce GB/s   UDP stream GB/s   vroce/UDP\n");
  for (const Row& r : rows) {
    std::string label = r.size >= (1 << 20) ? std::to_string(r.size >> 20) + " MiB"
                                            : std::to_string(r.size >> 10) + " KiB";
    std::printf("  %-27s %10.3f   %15.3f   %9.2f\n", label.c_str(), r.vroce_gbps, r.udp_gbps,
                r.udp_gbps > 0 ? r.vroce_gbps / r.udp_gbps : 0.0);
  }
  std::printf("  (requester: %llu packets retransmitted, %llu ACK timeouts, %llu NAKs received)\n",
              static_cast<unsigned long long>(stat(after_writes, "retransmitted_packets")),
              static_cast<unsigned long long>(stat(after_writes, "ack_timeouts")),
              static_cast<unsigned long long>(stat(after_writes, "naks_received.psn_sequence")));
  std::printf("\n8-byte ping-pong round trip   p50 us   p90 us   p99 us\n");
  std::printf("  vroce WRITE_WITH_IMM       %7.1f  %7.1f  %7.1f\n", percentile(vroce_rtt, 0.5),
              percentile(vroce_rtt, 0.9), percentile(vroce_rtt, 0.99));
  std::printf("  UDP %zu-byte datagrams      %7.1f  %7.1f  %7.1f\n", kPingBytes,
              percentile(udp_rtt, 0.5), percentile(udp_rtt, 0.9), percentile(udp_rtt, 0.99));
  std::printf("  vroce/UDP                  %7.2f  %7.2f  %7.2f\n",
              percentile(vroce_rtt, 0.5) / percentile(udp_rtt, 0.5),
              percentile(vroce_rtt, 0.9) / percentile(udp_rtt, 0.9),
              percentile(vroce_rtt, 0.99) / percentile(udp_rtt, 0.99));
  put<int>(ctl, 1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  // Before vroce reads its environment (the first verbs call, after the fork).
  setenv("VROCE_DEVICES", roce::test::vroce_device_list({"vrBenchA", "vrBenchB"}).c_str(), 1);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    die("socketpair");
  }
  int pings = quick ? 2000 : 20000;
  pid_t child = ::fork();
  if (child == 0) {
    ::close(sv[0]);
    try {
      std::exit(responder(sv[1], pings));
    } catch (const std::exception& e) {
      die(std::string("responder: ") + e.what());
    }
  }
  ::close(sv[1]);
  int rc = 1;
  try {
    rc = requester(sv[0], quick);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vroce_rc_bench: requester: %s\n", e.what());
  }
  ::close(sv[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
