// vroce_rc_peer: one side of a two-process RC scenario. The test suite (peer_test.cpp) or a
// script starts two of them, a requester and a responder, each on its own vroce device (and
// possibly in its own network namespace), joined by an inherited socket over which they swap
// QP numbers, GIDs and buffer keys. The requester drives; both verify what they can see and exit
// non-zero with a message on failure. Results go to stdout as "key=value" lines.
//
//   vroce_rc_peer --role requester|responder --device NAME --sock FD --scenario NAME [options]
//
// Scenarios: opcodes (every opcode, 0 B .. --max-size, unaligned, SGEs, inline, unsignaled),
// stream (--count mixed messages with data checks, for fault runs), bad_rkey, small_recv, rnr,
// blackhole (time until RETRY_EXC_ERR), pingpong (--count 8-byte WRITE_WITH_IMM round trips).
// --psn N starts the QP's PSNs at N (e.g. just below the 2^24 wrap), else they start at random.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "harness.h"

using namespace vroce_test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr unsigned kRemote =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

struct Args {
  std::string role;
  std::string device;
  std::string scenario;
  int sock = -1;
  uint64_t max_size = 64ull << 20;
  uint64_t count = 200;
  QpOptions qp;
  std::optional<uint32_t> psn;  // the QP's first PSN (--psn), else random
  std::chrono::milliseconds wait{60000};
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "vroce_rc_peer: %s\n", what.c_str());
  std::exit(1);
}

void check(bool ok, const std::string& what) {
  if (!ok) {
    die(what);
  }
}

void send_all(int fd, const void* data, size_t length) {
  auto* p = static_cast<const uint8_t*>(data);
  while (length > 0) {
    ssize_t n = ::send(fd, p, length, MSG_NOSIGNAL);
    check(n > 0, "peer socket send failed");
    p += n;
    length -= static_cast<size_t>(n);
  }
}

void recv_all(int fd, void* data, size_t length) {
  auto* p = static_cast<uint8_t*>(data);
  while (length > 0) {
    ssize_t n = ::recv(fd, p, length, 0);
    check(n > 0, "peer socket closed early (the other side failed?)");
    p += n;
    length -= static_cast<size_t>(n);
  }
}

uint32_t sync_word(int fd, uint32_t mine) {
  send_all(fd, &mine, sizeof(mine));
  uint32_t theirs = 0;
  recv_all(fd, &theirs, sizeof(theirs));
  return theirs;
}

PeerInfo swap_info(int fd, const PeerInfo& mine) {
  send_all(fd, &mine, sizeof(mine));
  PeerInfo theirs;
  recv_all(fd, &theirs, sizeof(theirs));
  return theirs;
}

void post_recv(ibv_qp* qp, uint64_t id, const ibv_sge* sges, int n) {
  ibv_recv_wr wr{};
  wr.wr_id = id;
  wr.sg_list = const_cast<ibv_sge*>(sges);
  wr.num_sge = n;
  ibv_recv_wr* bad = nullptr;
  check(ibv_post_recv(qp, &wr, &bad) == 0, "ibv_post_recv failed");
}

int post(ibv_qp* qp, ibv_wr_opcode op, uint64_t id, const ibv_sge* sges, int n, unsigned flags,
         uint64_t raddr = 0, uint32_t rkey = 0, uint32_t imm = 0) {
  ibv_send_wr wr{};
  wr.wr_id = id;
  wr.opcode = op;
  wr.sg_list = const_cast<ibv_sge*>(sges);
  wr.num_sge = n;
  wr.send_flags = flags;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &wr, &bad);
}

ibv_wc expect_one(ibv_cq* cq, const Args& a, const std::string& what) {
  auto wcs = wait_completions(cq, 1, a.wait);
  check(wcs.size() == 1, "no completion for " + what);
  return wcs[0];
}

void expect_ok(ibv_cq* cq, const Args& a, const std::string& what) {
  ibv_wc wc = expect_one(cq, a, what);
  check(wc.status == IBV_WC_SUCCESS, what + " completed with " + wc_status_name(wc.status));
}

void print_stats() {
  std::string json = stats_json();
  std::printf("stats=%s\n", json.c_str());
}

// ---- opcodes / stream: the responder ---------------------------------------------------------

// SENDs and WRITE_WITH_IMMs carry a seed in imm_data; SENDs land in ring slots of `slot` bytes,
// WRITE_WITH_IMM data at offset 0 of the exposed buffer. The responder checks each against the
// pattern and reports the count of good messages at the end.
constexpr int kSlots = 64;
constexpr uint64_t kSlotSize = 65536 + 64;  // SENDs of the scenarios reach 64 KiB

// Posted before the requester may start, so no SEND meets an empty receive queue.
std::unique_ptr<Buffer> prepare_landing(Device& dev, Endpoint& ep) {
  auto landing = std::make_unique<Buffer>(dev.pd, kSlotSize * kSlots, kRemote);
  for (int i = 0; i < kSlots; ++i) {
    ibv_sge s = landing->sge(static_cast<size_t>(i) * kSlotSize, kSlotSize);
    post_recv(ep.qp, static_cast<uint64_t>(i), &s, 1);
  }
  return landing;
}

void serve(const Args& a, Endpoint& ep, Buffer& exposed, Buffer& landing) {
  const uint64_t slot = kSlotSize;
  uint64_t verified = 0;
  uint64_t bad = 0;
  uint32_t done = 0;
  // The requester says how many receive completions to expect once it has posted everything.
  uint32_t expected = UINT32_MAX;
  bool have_expected = false;
  ibv_wc wc[16];
  while (!have_expected || done < expected) {
    if (!have_expected) {
      ssize_t n = ::recv(a.sock, &expected, sizeof(expected), MSG_DONTWAIT);
      if (n == sizeof(expected)) {
        have_expected = true;
      } else if (n == 0) {
        die("requester went away");
      }
    }
    int n = ibv_poll_cq(ep.recv_cq, 16, wc);
    if (n == 0) {
      std::this_thread::sleep_for(20us);
      continue;
    }
    for (int i = 0; i < n; ++i) {
      check(wc[i].status == IBV_WC_SUCCESS,
            std::string("receive completed with ") + wc_status_name(wc[i].status));
      uint32_t seed = ntohl(wc[i].imm_data);
      const uint8_t* data = wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM
                                ? exposed.data
                                : landing.data + wc[i].wr_id * slot;
      if ((wc[i].wc_flags & IBV_WC_WITH_IMM) == 0 ||
          find_mismatch(data, wc[i].byte_len, seed) == -1) {
        ++verified;
      } else {
        ++bad;
        std::fprintf(stderr, "responder: message seed %u (%u bytes) differs at byte %lld\n", seed,
                     wc[i].byte_len,
                     static_cast<long long>(find_mismatch(data, wc[i].byte_len, seed)));
      }
      ++done;
      ibv_sge s = landing.sge(wc[i].wr_id * slot, slot);
      post_recv(ep.qp, wc[i].wr_id, &s, 1);
      if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        send_all(a.sock, &done, sizeof(done));  // the requester may overwrite the data now
      }
    }
  }
  std::printf("responder_verified=%llu\nresponder_bad=%llu\n",
              static_cast<unsigned long long>(verified), static_cast<unsigned long long>(bad));
  send_all(a.sock, &bad, sizeof(bad));
  check(bad == 0, "responder saw corrupted messages");
}

// ---- opcodes: the requester ------------------------------------------------------------------

struct Requester {
  const Args& a;
  Device& dev;
  Endpoint& ep;
  PeerInfo remote;
  Buffer src;
  Buffer back;
  uint32_t seed = 1;
  uint32_t receives = 0;

  Requester(const Args& args, Device& d, Endpoint& e, const PeerInfo& r, uint64_t size)
      : a(args),
        dev(d),
        ep(e),
        remote(r),
        src(d.pd, size + 64, kRemote, 0),
        back(d.pd, size + 64, kRemote, 0) {}

  // Splits [off, off + len) of src into up to three SGEs.
  int sges(uint64_t off, uint64_t len, ibv_sge* out, int parts) {
    if (parts <= 1 || len < 3) {
      out[0] = src.sge(off, len);
      return 1;
    }
    uint64_t p1 = len / 3, p2 = len / 4;
    out[0] = src.sge(off, p1);
    out[1] = src.sge(off + p1, p2);
    out[2] = src.sge(off + p1 + p2, len - p1 - p2);
    return 3;
  }

  // WRITE len bytes to the peer at roff, READ them back, compare.
  void write_read(uint64_t len, uint64_t loff, uint64_t roff, int parts) {
    uint32_t s = seed++;
    fill_pattern(src.data + loff, len, s);
    ibv_sge sg[3];
    int n = sges(loff, len, sg, parts);
    check(post(ep.qp, IBV_WR_RDMA_WRITE, s, sg, n, IBV_SEND_SIGNALED, remote.addr + roff,
               remote.rkey) == 0,
          "post WRITE");
    expect_ok(ep.send_cq, a, "WRITE of " + std::to_string(len));
    std::memset(back.data, 0, len + 8);
    ibv_sge r[2] = {back.sge(0, len / 2), back.sge(len / 2, len - len / 2)};
    check(post(ep.qp, IBV_WR_RDMA_READ, s, r, 2, IBV_SEND_SIGNALED, remote.addr + roff,
               remote.rkey) == 0,
          "post READ");
    ibv_wc wc = expect_one(ep.send_cq, a, "READ of " + std::to_string(len));
    check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == len,
          "READ completion of " + std::to_string(len));
    int64_t bad = find_mismatch(back.data, len, s);
    check(bad == -1, "READ-back of a " + std::to_string(len) + "-byte WRITE differs at byte " +
                         std::to_string(bad));
  }

  void send(uint64_t len, uint64_t loff, int parts, unsigned extra, bool imm) {
    uint32_t s = seed++;
    fill_pattern(src.data + loff, len, s);
    ibv_sge sg[3];
    int n = sges(loff, len, sg, parts);
    check(post(ep.qp, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, s, sg, n, IBV_SEND_SIGNALED | extra,
               0, 0, s) == 0,
          "post SEND");
    expect_ok(ep.send_cq, a, "SEND of " + std::to_string(len));
    ++receives;
  }

  void write_imm(uint64_t len) {
    uint32_t s = seed++;
    fill_pattern(src.data, len, s);
    ibv_sge sg = src.sge(0, len);
    check(post(ep.qp, IBV_WR_RDMA_WRITE_WITH_IMM, s, &sg, 1, IBV_SEND_SIGNALED, remote.addr,
               remote.rkey, s) == 0,
          "post WRITE_WITH_IMM");
    expect_ok(ep.send_cq, a, "WRITE_WITH_IMM of " + std::to_string(len));
    ++receives;
    // The responder checks the data at offset 0 before anything overwrites it, and says so.
    uint32_t checked = 0;
    recv_all(a.sock, &checked, sizeof(checked));
  }
};

void run_opcodes_requester(const Args& a, Device& dev, Endpoint& ep, const PeerInfo& remote) {
  Requester r(a, dev, ep, remote, a.max_size);
  std::vector<uint64_t> sizes;
  for (uint64_t s : {0ull, 1ull, 7ull, 4095ull, 4096ull, 4097ull, 65539ull, 1ull << 20}) {
    if (s <= a.max_size) {
      sizes.push_back(s);
    }
  }
  for (uint64_t s = 4 << 20; s <= a.max_size; s *= 4) {
    sizes.push_back(s);
  }
  if (sizes.back() != a.max_size) {
    sizes.push_back(a.max_size);
  }
  for (uint64_t len : sizes) {
    uint64_t room = a.max_size + 64 - len;
    uint64_t loff = std::min<uint64_t>(room, 13);
    uint64_t roff = std::min<uint64_t>(room, 29);
    r.write_read(len, loff, roff, 1);
    r.write_read(len, 0, 0, 3);
    if (len <= 65536) {
      r.send(len, loff, 3, 0, true);
    }
    if (len <= 256) {
      r.send(len, 0, 1, IBV_SEND_INLINE, true);
    }
    r.write_imm(len);
    std::printf("size_ok=%llu\n", static_cast<unsigned long long>(len));
  }
  // Unsignaled WRITEs followed by a signaled one: one completion for all of them.
  for (uint32_t i = 0; i < 20; ++i) {
    fill_pattern(r.src.data + i * 1000, 1000, 900 + i);
    ibv_sge sg = r.src.sge(i * 1000, 1000);
    unsigned flags = i == 19 ? IBV_SEND_SIGNALED : 0;
    check(
        post(ep.qp, IBV_WR_RDMA_WRITE, i, &sg, 1, flags, remote.addr + i * 1000, remote.rkey) == 0,
        "post unsignaled WRITE");
  }
  auto wcs = wait_completions(ep.send_cq, 2, 2s);
  check(wcs.size() == 1 && wcs[0].wr_id == 19 && wcs[0].status == IBV_WC_SUCCESS,
        "20 WRITEs with one signaled gave other than one completion");
  ibv_sge rb = r.back.sge(0, 20000);
  check(post(ep.qp, IBV_WR_RDMA_READ, 0, &rb, 1, IBV_SEND_SIGNALED, remote.addr, remote.rkey) == 0,
        "post READ");
  expect_ok(ep.send_cq, a, "READ of the unsignaled WRITEs");
  for (uint32_t i = 0; i < 20; ++i) {
    check(find_mismatch(r.back.data + i * 1000, 1000, 900 + i) == -1,
          "unsignaled WRITE " + std::to_string(i) + " did not land");
  }
  // Tell the responder how many receive completions it should have seen.
  uint32_t total = r.receives;
  send_all(a.sock, &total, sizeof(total));
}

// ---- stream: mixed traffic for fault runs ----------------------------------------------------

void run_stream_requester(const Args& a, Device& dev, Endpoint& ep, const PeerInfo& remote) {
  constexpr uint64_t kMax = 256 * 1024;
  Requester r(a, dev, ep, remote, kMax * 2);
  std::mt19937_64 random(12345);
  for (uint64_t i = 0; i < a.count; ++i) {
    uint64_t len = random() % kMax;
    switch (random() % 3) {
      case 0:
        r.write_read(len, random() % 32, random() % 32, 1 + static_cast<int>(random() % 3));
        break;
      case 1:
        r.send(std::min<uint64_t>(len, 65536), random() % 32, 3, 0, true);
        break;
      default:
        r.write_imm(len);
        break;
    }
  }
  uint32_t total = r.receives;
  send_all(a.sock, &total, sizeof(total));
  std::printf("messages=%llu\n", static_cast<unsigned long long>(a.count));
}

// ---- errors ----------------------------------------------------------------------------------

void requester_expect_status(const Args& a, Endpoint& ep, ibv_wc_status want,
                             const std::string& what) {
  ibv_wc wc = expect_one(ep.send_cq, a, what);
  check(wc.status == want,
        what + ": got " + wc_status_name(wc.status) + ", want " + wc_status_name(want));
  std::printf("status=%s\n", wc_status_name(wc.status));
}

void expect_event(const Args& a, Device& dev, ibv_event_type type, const std::string& what) {
  ibv_async_event ev{};
  check(wait_async_event(dev.ctx, &ev, a.wait), "no async event: " + what);
  check(ev.event_type == type, what + ": got event " + ibv_event_type_str(ev.event_type));
  ibv_ack_async_event(&ev);
  std::printf("event=%s\n", ibv_event_type_str(type));
}

ibv_qp_state state_of(ibv_qp* qp) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  check(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init) == 0, "ibv_query_qp");
  return attr.qp_state;
}

// ---- pingpong: 8-byte WRITE_WITH_IMM round trips ---------------------------------------------

void run_pingpong(const Args& a, Endpoint& ep, Buffer& local, const PeerInfo& remote,
                  bool initiator) {
  for (int i = 0; i < 16; ++i) {
    post_recv(ep.qp, static_cast<uint64_t>(i), nullptr, 0);
  }
  sync_word(a.sock, 1);
  std::vector<double> rtts;
  rtts.reserve(a.count);
  ibv_sge sg = local.sge(0, 8);
  for (uint64_t i = 0; i < a.count; ++i) {
    auto t0 = Clock::now();
    if (initiator) {
      check(post(ep.qp, IBV_WR_RDMA_WRITE_WITH_IMM, i, &sg, 1, IBV_SEND_INLINE, remote.addr,
                 remote.rkey, static_cast<uint32_t>(i)) == 0,
            "post");
    }
    ibv_wc wc;
    while (ibv_poll_cq(ep.recv_cq, 1, &wc) == 0) {
    }
    check(wc.status == IBV_WC_SUCCESS, "pingpong receive failed");
    post_recv(ep.qp, wc.wr_id, nullptr, 0);
    if (!initiator) {
      check(post(ep.qp, IBV_WR_RDMA_WRITE_WITH_IMM, i, &sg, 1, IBV_SEND_INLINE, remote.addr,
                 remote.rkey, static_cast<uint32_t>(i)) == 0,
            "post");
    }
    if (initiator) {
      rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    if (i % 8 == 7) {
      // Keep the send queue from filling with unsignaled WRs.
      check(post(ep.qp, IBV_WR_RDMA_WRITE, 1000000 + i, nullptr, 0, IBV_SEND_SIGNALED, remote.addr,
                 remote.rkey) == 0,
            "post");
      expect_ok(ep.send_cq, a, "pingpong signal");
    }
  }
  if (initiator) {
    std::sort(rtts.begin(), rtts.end());
    auto pct = [&](double p) {
      return rtts[static_cast<size_t>(p * static_cast<double>(rtts.size() - 1))];
    };
    std::printf("rtt_p50_us=%.1f\nrtt_p90_us=%.1f\nrtt_p99_us=%.1f\n", pct(0.5), pct(0.9),
                pct(0.99));
  }
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> std::string {
      check(i + 1 < argc, "missing value for " + k);
      return argv[++i];
    };
    auto num = [&]() { return std::stoull(value()); };
    if (k == "--role") {
      a.role = value();
    } else if (k == "--device") {
      a.device = value();
    } else if (k == "--scenario") {
      a.scenario = value();
    } else if (k == "--sock") {
      a.sock = static_cast<int>(num());
    } else if (k == "--max-size") {
      a.max_size = num();
    } else if (k == "--count") {
      a.count = num();
    } else if (k == "--timeout") {
      a.qp.timeout = static_cast<uint8_t>(num());
    } else if (k == "--retry-cnt") {
      a.qp.retry_cnt = static_cast<uint8_t>(num());
    } else if (k == "--rnr-retry") {
      a.qp.rnr_retry = static_cast<uint8_t>(num());
    } else if (k == "--min-rnr-timer") {
      a.qp.min_rnr_timer = static_cast<uint8_t>(num());
    } else if (k == "--tclass") {
      a.qp.traffic_class = static_cast<uint8_t>(num());
    } else if (k == "--mtu") {
      a.qp.mtu = static_cast<ibv_mtu>(num());
    } else if (k == "--psn") {
      a.psn = static_cast<uint32_t>(num() & 0xFFFFFF);
    } else if (k == "--wait-ms") {
      a.wait = std::chrono::milliseconds(num());
    } else {
      die("unknown argument " + k);
    }
  }
  check(!a.role.empty() && !a.device.empty() && !a.scenario.empty() && a.sock >= 0,
        "usage: --role R --device D --scenario S --sock FD");
  return a;
}

int run(const Args& a) {
  bool requester = a.role == "requester";
  Device dev(a.device);
  // A responder exposes a buffer big enough for the largest WRITE/READ.
  uint64_t exposed_size = requester ? 4096 : std::max<uint64_t>(a.max_size + 64, 1 << 20);
  if (a.scenario == "stream") {
    exposed_size = requester ? 4096 : 2 * 256 * 1024 + 64;
  }
  Buffer exposed(dev.pd, exposed_size, kRemote);
  Endpoint ep(dev, a.qp);
  if (a.psn) {
    ep.psn = *a.psn;
  }
  PeerInfo mine = ep.info();
  mine.addr = exposed.addr();
  mine.rkey = exposed.mr->rkey;
  mine.length = exposed.size;
  PeerInfo remote = swap_info(a.sock, mine);
  ep.connect(remote);
  std::unique_ptr<Buffer> landing;
  if (!requester && (a.scenario == "opcodes" || a.scenario == "stream")) {
    landing = prepare_landing(dev, ep);
  }
  sync_word(a.sock, 0);  // both sides are in RTS

  if (a.scenario == "opcodes" || a.scenario == "stream") {
    if (requester) {
      if (a.scenario == "opcodes") {
        run_opcodes_requester(a, dev, ep, remote);
      } else {
        run_stream_requester(a, dev, ep, remote);
      }
      // The responder's verdict.
      uint64_t bad = 0;
      recv_all(a.sock, &bad, sizeof(bad));
      check(bad == 0, "the responder found corrupted messages");
    } else {
      serve(a, ep, exposed, *landing);
    }
  } else if (a.scenario == "bad_rkey") {
    if (requester) {
      ibv_sge sg = exposed.sge(0, 64);
      check(post(ep.qp, IBV_WR_RDMA_WRITE, 1, &sg, 1, IBV_SEND_SIGNALED, remote.addr,
                 remote.rkey + 0x100) == 0,
            "post");
      check(post(ep.qp, IBV_WR_RDMA_WRITE, 2, &sg, 1, IBV_SEND_SIGNALED, remote.addr,
                 remote.rkey) == 0,
            "post");
      requester_expect_status(a, ep, IBV_WC_REM_ACCESS_ERR, "WRITE with a bad rkey");
      requester_expect_status(a, ep, IBV_WC_WR_FLUSH_ERR, "the WRITE after it");
      check(state_of(ep.qp) == IBV_QPS_ERR, "requester QP not in ERR");
    } else {
      expect_event(a, dev, IBV_EVENT_QP_ACCESS_ERR, "responder access error");
      check(state_of(ep.qp) == IBV_QPS_ERR, "responder QP not in ERR");
      std::printf("responder_state=ERR\n");
    }
  } else if (a.scenario == "small_recv") {
    if (requester) {
      Buffer big(dev.pd, 10000, kRemote);
      ibv_sge sg = big.sge(0, 10000);
      sync_word(a.sock, 1);  // the responder posted its receive
      check(post(ep.qp, IBV_WR_SEND, 1, &sg, 1, IBV_SEND_SIGNALED) == 0, "post");
      requester_expect_status(a, ep, IBV_WC_REM_INV_REQ_ERR, "SEND into a small receive");
    } else {
      ibv_sge sg = exposed.sge(0, 100);
      post_recv(ep.qp, 5, &sg, 1);
      sync_word(a.sock, 1);
      ibv_wc wc = expect_one(ep.recv_cq, a, "small receive");
      check(wc.status == IBV_WC_LOC_LEN_ERR,
            std::string("receive completed with ") + wc_status_name(wc.status));
      std::printf("recv_status=%s\n", wc_status_name(wc.status));
      expect_event(a, dev, IBV_EVENT_QP_REQ_ERR, "responder invalid request");
    }
  } else if (a.scenario == "rnr") {
    if (requester) {
      ibv_sge sg = exposed.sge(0, 64);
      check(post(ep.qp, IBV_WR_SEND, 1, &sg, 1, IBV_SEND_SIGNALED) == 0, "post");
      requester_expect_status(a, ep, IBV_WC_RNR_RETRY_EXC_ERR, "SEND with no receive posted");
      print_stats();
    }
    sync_word(a.sock, 2);
    if (!requester) {
      print_stats();
    }
  } else if (a.scenario == "blackhole") {
    if (requester) {
      ibv_sge sg = exposed.sge(0, 64);
      auto t0 = Clock::now();
      check(post(ep.qp, IBV_WR_RDMA_WRITE, 1, &sg, 1, IBV_SEND_SIGNALED, remote.addr,
                 remote.rkey) == 0,
            "post");
      requester_expect_status(a, ep, IBV_WC_RETRY_EXC_ERR, "WRITE into a black hole");
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
      std::printf("elapsed_us=%lld\n", static_cast<long long>(us.count()));
      print_stats();
    }
    sync_word(a.sock, 3);
  } else if (a.scenario == "pingpong") {
    run_pingpong(a, ep, exposed, remote, requester);
  } else {
    die("unknown scenario " + a.scenario);
  }
  sync_word(a.sock, 9);  // neither side tears down while the other still needs it
  if (a.scenario == "opcodes" || a.scenario == "stream") {
    print_stats();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  try {
    return run(a);
  } catch (const std::exception& e) {
    die(std::string(a.role) + ": " + e.what());
  }
}
