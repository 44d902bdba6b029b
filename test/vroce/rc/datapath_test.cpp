// The RC data path in one process, between two vroce devices on loopback (vrA and vrB on
// the process's first two test addresses, set by the test's main): every opcode with data checked,
// several SGEs, unaligned buffers, inline data, unsignaled WRs, fences, completion channels, and
// the error paths (remote access, receive too small, RNR, local protection, flush). Small enough to
// run under ASan/UBSan and TSan; the two-process suite covers the large sizes.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <thread>

#include "hang_bound.h"
#include "harness.h"
#include "test_addresses.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace vroce_test;
using namespace std::chrono_literals;

namespace {

constexpr auto kWait = roce::test::kHangBound;
constexpr unsigned kRemote =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

struct Pair {
  Device a{"vrA"};
  Device b{"vrB"};
  Endpoint ea;
  Endpoint eb;

  explicit Pair(const QpOptions& oa = {}, const QpOptions& ob = {}) : ea(a, oa), eb(b, ob) {
    ea.connect(eb.info());
    eb.connect(ea.info());
  }
};

void post_recv(Endpoint& e, uint64_t wr_id, std::vector<ibv_sge> sges) {
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = sges.data();
  wr.num_sge = static_cast<int>(sges.size());
  ibv_recv_wr* bad = nullptr;
  REQUIRE(ibv_post_recv(e.qp, &wr, &bad) == 0);
}

int post_send(Endpoint& e, ibv_wr_opcode opcode, uint64_t wr_id, std::vector<ibv_sge> sges,
              unsigned flags = IBV_SEND_SIGNALED, uint64_t raddr = 0, uint32_t rkey = 0,
              uint32_t imm = 0) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = opcode;
  wr.sg_list = sges.data();
  wr.num_sge = static_cast<int>(sges.size());
  wr.send_flags = flags;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(e.qp, &wr, &bad);
}

ibv_wc one(ibv_cq* cq) {
  auto wcs = wait_completions(cq, 1, kWait);
  REQUIRE(wcs.size() == 1);
  return wcs[0];
}

ibv_qp_state state_of(ibv_qp* qp) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  REQUIRE(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init) == 0);
  return attr.qp_state;
}

}  // namespace

TEST_CASE("SEND and SEND_WITH_IMM land in the receive WQE with the completion fields",
          "[datapath]") {
  Pair p;
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{4097}, size_t{100000}}) {
    CAPTURE(size);
    Buffer src(p.a.pd, size, kRemote, 3);
    Buffer dst(p.b.pd, size + 64, kRemote, 5);
    fill_pattern(src.data, size, size);
    std::memset(dst.data, 0, dst.size);
    post_recv(p.eb, 77, {dst.sge(0, dst.size)});
    REQUIRE(post_send(p.ea, IBV_WR_SEND_WITH_IMM, 11, {src.sge(0, size)}, IBV_SEND_SIGNALED, 0, 0,
                      0xC0FFEE) == 0);
    ibv_wc s = one(p.ea.send_cq);
    CHECK(s.status == IBV_WC_SUCCESS);
    CHECK(s.wr_id == 11);
    CHECK(s.opcode == IBV_WC_SEND);
    CHECK(s.qp_num == p.ea.qp->qp_num);
    ibv_wc r = one(p.eb.recv_cq);
    CHECK(r.status == IBV_WC_SUCCESS);
    CHECK(r.wr_id == 77);
    CHECK(r.opcode == IBV_WC_RECV);
    CHECK(r.byte_len == size);
    CHECK((r.wc_flags & IBV_WC_WITH_IMM) != 0);
    CHECK(ntohl(r.imm_data) == 0xC0FFEE);
    CHECK(r.qp_num == p.eb.qp->qp_num);
    CHECK(r.src_qp == p.ea.qp->qp_num);
    CHECK(find_mismatch(dst.data, size, size) == -1);
  }
}

TEST_CASE("RDMA WRITE and WRITE_WITH_IMM across several SGEs and unaligned buffers", "[datapath]") {
  Pair p;
  for (size_t size :
       {size_t{0}, size_t{7}, size_t{4095}, size_t{4096}, size_t{12289}, size_t{1 << 20}}) {
    CAPTURE(size);
    Buffer src(p.a.pd, size + 16, kRemote, 1);
    Buffer dst(p.b.pd, size + 16, kRemote, 7);
    fill_pattern(src.data, size, 1000 + size);
    std::memset(dst.data, 0xEE, dst.size);
    // Three SGEs of uneven lengths covering `size` bytes.
    size_t s1 = size / 3, s2 = size / 5;
    std::vector<ibv_sge> sges = {src.sge(0, s1), src.sge(s1, s2), src.sge(s1 + s2, size - s1 - s2)};
    REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE, 1, sges, IBV_SEND_SIGNALED, dst.addr() + 3,
                      dst.mr->rkey) == 0);
    ibv_wc s = one(p.ea.send_cq);
    CHECK(s.status == IBV_WC_SUCCESS);
    CHECK(s.opcode == IBV_WC_RDMA_WRITE);
    CHECK(find_mismatch(dst.data + 3, size, 1000 + size) == -1);
    CHECK(dst.data[2] == 0xEE);
    CHECK(dst.data[3 + size] == 0xEE);

    // WITH_IMM: same bytes again, plus a receive completion carrying the length and immediate.
    std::memset(dst.data, 0, dst.size);
    post_recv(p.eb, 5, {});
    REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE_WITH_IMM, 2, sges, IBV_SEND_SIGNALED, dst.addr(),
                      dst.mr->rkey, static_cast<uint32_t>(size)) == 0);
    CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
    ibv_wc r = one(p.eb.recv_cq);
    CHECK(r.status == IBV_WC_SUCCESS);
    CHECK(r.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK(r.byte_len == size);
    CHECK(ntohl(r.imm_data) == size);
    CHECK(find_mismatch(dst.data, size, 1000 + size) == -1);
  }
}

TEST_CASE("RDMA READ into several SGEs", "[datapath]") {
  Pair p;
  for (size_t size : {size_t{0}, size_t{100}, size_t{4096}, size_t{70000}, size_t{1 << 20}}) {
    CAPTURE(size);
    Buffer remote(p.b.pd, size + 8, kRemote, 2);
    Buffer local(p.a.pd, size + 8, kRemote, 6);
    fill_pattern(remote.data, size, 7 * size + 1);
    std::memset(local.data, 0, local.size);
    size_t half = size / 2;
    REQUIRE(post_send(p.ea, IBV_WR_RDMA_READ, 9, {local.sge(0, half), local.sge(half, size - half)},
                      IBV_SEND_SIGNALED, remote.addr(), remote.mr->rkey) == 0);
    ibv_wc s = one(p.ea.send_cq);
    CHECK(s.status == IBV_WC_SUCCESS);
    CHECK(s.opcode == IBV_WC_RDMA_READ);
    CHECK(s.byte_len == size);
    CHECK(find_mismatch(local.data, size, 7 * size + 1) == -1);
  }
}

TEST_CASE("inline SEND: the buffer is reusable as soon as ibv_post_send returns", "[datapath]") {
  Pair p;
  uint8_t bytes[200];
  fill_pattern(bytes, sizeof(bytes), 42);
  Buffer dst(p.b.pd, 256, kRemote);
  post_recv(p.eb, 1, {dst.sge(0, 256)});
  ibv_sge sge{reinterpret_cast<uint64_t>(bytes), sizeof(bytes), 0};  // no lkey needed inline
  REQUIRE(post_send(p.ea, IBV_WR_SEND, 3, {sge}, IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
  std::memset(bytes, 0, sizeof(bytes));
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  ibv_wc r = one(p.eb.recv_cq);
  CHECK(r.byte_len == 200);
  CHECK(find_mismatch(dst.data, 200, 42) == -1);
  // Inline data above the QP's max_inline_data is refused at post time.
  std::vector<uint8_t> big(p.ea.qp ? 2048 : 0);
  ibv_sge bsge{reinterpret_cast<uint64_t>(big.data()), 2048, 0};
  CHECK(post_send(p.ea, IBV_WR_SEND, 4, {bsge}, IBV_SEND_SIGNALED | IBV_SEND_INLINE) == EINVAL);
}

TEST_CASE("unsignaled WRs complete silently and hold their slots until a signaled one",
          "[datapath]") {
  QpOptions o;
  o.max_send_wr = 4;
  Pair p(o);
  REQUIRE(p.ea.qp != nullptr);
  Buffer src(p.a.pd, 64, kRemote);
  Buffer dst(p.b.pd, 64, kRemote);
  auto write = [&](uint64_t id, unsigned flags) {
    return post_send(p.ea, IBV_WR_RDMA_WRITE, id, {src.sge(0, 64)}, flags, dst.addr(),
                     dst.mr->rkey);
  };
  for (uint64_t i = 0; i < 4; ++i) {
    REQUIRE(write(i, 0) == 0);
  }
  // All four slots are held by unsignaled WRs: the queue is full until a signaled completion.
  std::this_thread::sleep_for(100ms);
  CHECK(write(99, IBV_SEND_SIGNALED) == ENOMEM);
  auto none = wait_completions(p.ea.send_cq, 1, 200ms);
  CHECK(none.empty());

  Pair q(o);
  Buffer qsrc(q.a.pd, 64, kRemote);
  Buffer qdst(q.b.pd, 64, kRemote);
  for (uint64_t i = 0; i < 3; ++i) {
    REQUIRE(post_send(q.ea, IBV_WR_RDMA_WRITE, i, {qsrc.sge(0, 64)}, 0, qdst.addr(),
                      qdst.mr->rkey) == 0);
  }
  REQUIRE(post_send(q.ea, IBV_WR_RDMA_WRITE, 3, {qsrc.sge(0, 64)}, IBV_SEND_SIGNALED, qdst.addr(),
                    qdst.mr->rkey) == 0);
  auto wcs = wait_completions(q.ea.send_cq, 1, kWait);
  REQUIRE(wcs.size() == 1);
  CHECK(wcs[0].wr_id == 3);
  // The signaled completion freed all four slots.
  for (uint64_t i = 4; i < 8; ++i) {
    CHECK(post_send(q.ea, IBV_WR_RDMA_WRITE, i, {qsrc.sge(0, 64)}, IBV_SEND_SIGNALED, qdst.addr(),
                    qdst.mr->rkey) == 0);
  }
  CHECK(wait_completions(q.ea.send_cq, 4, kWait).size() == 4);
}

TEST_CASE("a program that polls a completion and posts at once at full depth never gets ENOMEM",
          "[datapath]") {
  // The send-queue slot is free before its completion is visible (mlx5 frees it in poll_cq),
  // so the post that follows a polled completion always finds room. ib_write_bw does exactly
  // this with tx_depth = max_send_wr. (Before the fix, the window between the completion and
  // the slot's release was a few instructions of the progress thread: perftest hit it in 3 of
  // 15 runs on a loaded machine, this loop only rarely; it guards the order.)
  // 64 KiB messages, so that completions mostly come from the progress thread (a poller that
  // completes its own work frees the slot in its own thread).
  QpOptions o;
  o.max_send_wr = 4;
  Pair p(o);
  constexpr size_t kSize = 65536;
  Buffer src(p.a.pd, kSize, kRemote);
  Buffer dst(p.b.pd, kSize, kRemote);
  auto write = [&](uint64_t id) {
    return post_send(p.ea, IBV_WR_RDMA_WRITE, id, {src.sge(0, kSize)}, IBV_SEND_SIGNALED,
                     dst.addr(), dst.mr->rkey);
  };
  uint64_t posted = 0;
  for (; posted < 4; ++posted) {
    REQUIRE(write(posted) == 0);
  }
  // Full depth from here on: every post replaces a completion just polled.
  constexpr uint64_t kMessages = 2000;
  uint64_t completed = 0;
  uint64_t enomem = 0;
  uint64_t empty_polls = 0;
  while (completed < kMessages && empty_polls < 200'000'000) {
    ibv_wc wc[4];
    int n = ibv_poll_cq(p.ea.send_cq, 4, wc);
    if (n < 0) {
      FAIL("ibv_poll_cq: " << n);
    }
    if (n == 0) {
      ++empty_polls;
      continue;
    }
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        FAIL("completion " << wc[i].wr_id << ": " << ibv_wc_status_str(wc[i].status));
      }
      ++completed;
      if (posted < kMessages) {
        int rc = write(posted);
        if (rc == ENOMEM) {
          ++enomem;
        } else if (rc != 0) {
          FAIL("ibv_post_send: " << rc);
        }
        ++posted;
      }
    }
  }
  CHECK(completed + enomem == kMessages);
  CHECK(enomem == 0);
}

TEST_CASE("a send's completion is visible before the reply to it arrives", "[datapath]") {
  // A NIC ACKs a message before its host can react to it, so a requester always sees its send
  // complete before the peer's reply to that send completes; perftest sizes its CQs on it
  // (ib_send_lat -e overran its CQ when a trial of vroce sent the reply ahead of the ACK). The
  // progress threads spin in this suite, so the polling and the progress thread race for every
  // packet.
  Pair p;
  Buffer ping(p.a.pd, 8, kRemote);
  Buffer pong(p.b.pd, 8, kRemote);
  Buffer a_in(p.a.pd, 8, kRemote);
  Buffer b_in(p.b.pd, 8, kRemote);
  constexpr uint64_t kRoundTrips = 3000;
  int reply_before_send = 0;
  for (uint64_t i = 0; i < kRoundTrips; ++i) {
    post_recv(p.eb, 2 * i, {b_in.sge(0, 8)});
    post_recv(p.ea, 2 * i + 1, {a_in.sge(0, 8)});
    REQUIRE(post_send(p.ea, IBV_WR_SEND, i, {ping.sge(0, 8)}) == 0);
    REQUIRE(one(p.eb.recv_cq).status == IBV_WC_SUCCESS);
    REQUIRE(post_send(p.eb, IBV_WR_SEND, i, {pong.sge(0, 8)}) == 0);
    REQUIRE(one(p.ea.recv_cq).status == IBV_WC_SUCCESS);
    // The reply has completed: the ping's completion must be there already.
    ibv_wc wc{};
    int n = ibv_poll_cq(p.ea.send_cq, 1, &wc);
    REQUIRE(n >= 0);
    if (n == 0) {
      ++reply_before_send;
      REQUIRE(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
    } else {
      REQUIRE(wc.status == IBV_WC_SUCCESS);
    }
    REQUIRE(one(p.eb.send_cq).status == IBV_WC_SUCCESS);
  }
  CHECK(reply_before_send == 0);
}

TEST_CASE("a program that spins on memory sees each RDMA WRITE, as ib_write_lat does",
          "[datapath]") {
  // ib_write_lat's loop on each side: RDMA WRITE the count, poll the send CQ until its
  // completion (the ACK), then spin on memory until the peer's count arrives. Only vroce's
  // progress threads can place the peer's WRITE while a side spins on memory; this suite's
  // threads spin after activity, so an arrival they find is taken at once if the engine is free
  // and left to the polling thread that holds it otherwise. Either way every count must land.
  Pair p;
  Buffer a_out(p.a.pd, 8, kRemote);
  Buffer b_out(p.b.pd, 8, kRemote);
  Buffer a_in(p.a.pd, 8, kRemote);
  Buffer b_in(p.b.pd, 8, kRemote);
  std::memset(a_in.data, 0, 8);
  std::memset(b_in.data, 0, 8);
  constexpr uint64_t kRoundTrips = 2000;
  struct Side {
    Endpoint& self;
    Buffer& out;
    Buffer& in;
    Buffer& peer_in;
    bool starts;
    std::string failure;
  };
  Side a{p.ea, a_out, a_in, b_in, true, {}};
  Side b{p.eb, b_out, b_in, a_in, false, {}};
  auto run = [](Side& s) {
    auto arrived = [&s](uint64_t i) {
      if (wait_for_word(reinterpret_cast<const uint64_t*>(s.in.data), i, kWait)) {
        return true;
      }
      s.failure = "count " + std::to_string(i) + " never arrived";
      return false;
    };
    for (uint64_t i = 1; i <= kRoundTrips; ++i) {
      if (!s.starts && !arrived(i)) {
        return;
      }
      std::memcpy(s.out.data, &i, sizeof(i));
      if (post_send(s.self, IBV_WR_RDMA_WRITE, i, {s.out.sge(0, 8)}, IBV_SEND_SIGNALED,
                    s.peer_in.addr(), s.peer_in.mr->rkey) != 0) {
        s.failure = "ibv_post_send failed at " + std::to_string(i);
        return;
      }
      auto wcs = wait_completions(s.self.send_cq, 1, kWait);
      if (wcs.size() != 1 || wcs[0].status != IBV_WC_SUCCESS) {
        s.failure = "no successful completion for WRITE " + std::to_string(i);
        return;
      }
      if (s.starts && !arrived(i)) {
        return;
      }
    }
  };
  std::thread tb(run, std::ref(b));
  run(a);
  tb.join();
  CHECK(a.failure == std::string{});
  CHECK(b.failure == std::string{});
}

TEST_CASE("sq_sig_all signals every WR", "[datapath]") {
  QpOptions o;
  o.sq_sig_all = true;
  Pair p(o);
  Buffer src(p.a.pd, 64, kRemote);
  Buffer dst(p.b.pd, 64, kRemote);
  for (uint64_t i = 0; i < 5; ++i) {
    REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE, i, {src.sge(0, 64)}, 0, dst.addr(), dst.mr->rkey) ==
            0);
  }
  auto wcs = wait_completions(p.ea.send_cq, 5, kWait);
  REQUIRE(wcs.size() == 5);
  for (uint64_t i = 0; i < 5; ++i) {
    CHECK(wcs[i].wr_id == i);
  }
}

TEST_CASE("IBV_SEND_FENCE holds a SEND until the RDMA READ before it has its data", "[datapath]") {
  Pair p;
  constexpr size_t kSize = 256 * 1024;
  Buffer remote(p.b.pd, kSize, kRemote);
  Buffer local(p.a.pd, kSize, kRemote);
  Buffer landing(p.b.pd, kSize, kRemote);
  fill_pattern(remote.data, kSize, 555);
  std::memset(local.data, 0, kSize);
  post_recv(p.eb, 1, {landing.sge(0, kSize)});
  // READ remote -> local, then SEND local -> landing: with the fence the SEND carries what the
  // READ brought; without it the SEND reads `local` before the data arrived. Both WRs go in one
  // ibv_post_send so the progress thread sees them together (without the fence this fails).
  ibv_sge rs = local.sge(0, kSize);
  ibv_sge ss = local.sge(0, kSize);
  ibv_send_wr send{};
  send.wr_id = 2;
  send.opcode = IBV_WR_SEND;
  send.sg_list = &ss;
  send.num_sge = 1;
  send.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
  ibv_send_wr read{};
  read.wr_id = 1;
  read.opcode = IBV_WR_RDMA_READ;
  read.sg_list = &rs;
  read.num_sge = 1;
  read.send_flags = IBV_SEND_SIGNALED;
  read.wr.rdma.remote_addr = remote.addr();
  read.wr.rdma.rkey = remote.mr->rkey;
  read.next = &send;
  ibv_send_wr* bad = nullptr;
  REQUIRE(ibv_post_send(p.ea.qp, &read, &bad) == 0);
  auto wcs = wait_completions(p.ea.send_cq, 2, kWait);
  REQUIRE(wcs.size() == 2);
  CHECK(wcs[0].wr_id == 1);
  CHECK(wcs[1].wr_id == 2);
  CHECK(one(p.eb.recv_cq).status == IBV_WC_SUCCESS);
  CHECK(find_mismatch(landing.data, kSize, 555) == -1);
}

TEST_CASE("a bad rkey: REM_ACCESS_ERR, both QPs to ERR, the responder's access event",
          "[datapath][errors]") {
  Pair p;
  Buffer src(p.a.pd, 128, kRemote);
  Buffer dst(p.b.pd, 128, kRemote);
  REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE, 1, {src.sge(0, 128)}, IBV_SEND_SIGNALED, dst.addr(),
                    dst.mr->rkey ^ 0x5500) == 0);
  REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE, 2, {src.sge(0, 128)}, IBV_SEND_SIGNALED, dst.addr(),
                    dst.mr->rkey) == 0);
  auto wcs = wait_completions(p.ea.send_cq, 2, kWait);
  REQUIRE(wcs.size() == 2);
  CHECK(wcs[0].status == IBV_WC_REM_ACCESS_ERR);
  CHECK(wcs[0].wr_id == 1);
  CHECK(wcs[1].status == IBV_WC_WR_FLUSH_ERR);
  CHECK(wcs[1].wr_id == 2);
  CHECK(state_of(p.ea.qp) == IBV_QPS_ERR);
  ibv_async_event ev{};
  REQUIRE(wait_async_event(p.b.ctx, &ev, kWait));
  CHECK(ev.event_type == IBV_EVENT_QP_ACCESS_ERR);
  CHECK(ev.element.qp == p.eb.qp);
  ibv_ack_async_event(&ev);
  CHECK(state_of(p.eb.qp) == IBV_QPS_ERR);
  // Out of bounds on a valid rkey is the same error.
  Pair q;
  Buffer qsrc(q.a.pd, 128, kRemote);
  Buffer qdst(q.b.pd, 128, kRemote);
  REQUIRE(post_send(q.ea, IBV_WR_RDMA_WRITE, 3, {qsrc.sge(0, 128)}, IBV_SEND_SIGNALED,
                    qdst.addr() + 64, qdst.mr->rkey) == 0);
  CHECK(one(q.ea.send_cq).status == IBV_WC_REM_ACCESS_ERR);
  ibv_async_event ev2{};
  REQUIRE(wait_async_event(q.b.ctx, &ev2, kWait));
  ibv_ack_async_event(&ev2);
}

TEST_CASE(
    "a receive buffer too small: LOC_LEN_ERR at the responder, REM_INV_REQ_ERR at the "
    "requester",
    "[datapath][errors]") {
  Pair p;
  Buffer src(p.a.pd, 1000, kRemote);
  Buffer dst(p.b.pd, 100, kRemote);
  post_recv(p.eb, 8, {dst.sge(0, 100)});
  REQUIRE(post_send(p.ea, IBV_WR_SEND, 1, {src.sge(0, 1000)}) == 0);
  ibv_wc r = one(p.eb.recv_cq);
  CHECK(r.status == IBV_WC_LOC_LEN_ERR);
  CHECK(r.wr_id == 8);
  ibv_wc s = one(p.ea.send_cq);
  CHECK(s.status == IBV_WC_REM_INV_REQ_ERR);
  ibv_async_event ev{};
  REQUIRE(wait_async_event(p.b.ctx, &ev, kWait));
  CHECK(ev.event_type == IBV_EVENT_QP_REQ_ERR);
  ibv_ack_async_event(&ev);
}

TEST_CASE(
    "no receive posted: RNR NAKs, then RNR_RETRY_EXC_ERR; with retries a late receive "
    "succeeds",
    "[datapath][errors]") {
  QpOptions o;
  o.rnr_retry = 2;
  QpOptions ob;
  ob.min_rnr_timer = 1;  // 0.01 ms
  Pair p(o, ob);
  Buffer src(p.a.pd, 64, kRemote);
  std::string before = stats_json();
  REQUIRE(post_send(p.ea, IBV_WR_SEND, 1, {src.sge(0, 64)}) == 0);
  ibv_wc s = one(p.ea.send_cq);
  CHECK(s.status == IBV_WC_RNR_RETRY_EXC_ERR);
  std::string after = stats_json();
  // The initial try and two retries were each refused.
  CHECK(stat(after, "rnr_naks_sent") - stat(before, "rnr_naks_sent") == 3);
  CHECK(stat(after, "rnr_naks_received") - stat(before, "rnr_naks_received") == 3);

  QpOptions infinite;
  infinite.rnr_retry = 7;
  Pair q(infinite, ob);
  Buffer qsrc(q.a.pd, 64, kRemote);
  Buffer qdst(q.b.pd, 64, kRemote);
  fill_pattern(qsrc.data, 64, 9);
  REQUIRE(post_send(q.ea, IBV_WR_SEND, 1, {qsrc.sge(0, 64)}) == 0);
  std::this_thread::sleep_for(50ms);
  post_recv(q.eb, 2, {qdst.sge(0, 64)});
  CHECK(one(q.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(one(q.eb.recv_cq).status == IBV_WC_SUCCESS);
  CHECK(find_mismatch(qdst.data, 64, 9) == -1);
}

TEST_CASE(
    "a WRITE WITH IMMEDIATE that finds no receive is RNR NAKed, then lands whole once one is "
    "posted, in one packet or several",
    "[datapath][errors]") {
  QpOptions infinite;
  infinite.rnr_retry = 7;
  QpOptions ob;
  ob.min_rnr_timer = 1;  // 0.01 ms
  Pair p(infinite, ob);
  // 64 bytes: one ONLY packet, whose retry must not read as a new message inside one the RNR
  // left begun. 10000 bytes: FIRST, MIDDLE, then the LAST is refused and sent again.
  uint32_t imm = 40;
  for (size_t size : {size_t{64}, size_t{10000}}) {
    CAPTURE(size);
    Buffer src(p.a.pd, size, kRemote);
    Buffer dst(p.b.pd, size, kRemote);
    fill_pattern(src.data, size, size);
    std::memset(dst.data, 0, dst.size);
    const std::string before = stats_json();
    REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE_WITH_IMM, imm, {src.sge(0, size)}, IBV_SEND_SIGNALED,
                      dst.addr(), dst.mr->rkey, imm) == 0);
    // The receive goes up only once the write has been refused at least once, however slow the
    // machine: the retry after it is what this test is about.
    const auto rnr_naks = [&] { return stat(stats_json(), "rnr_naks_sent"); };
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (rnr_naks() == stat(before, "rnr_naks_sent") &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    post_recv(p.eb, imm, {});
    ibv_wc s = one(p.ea.send_cq);
    CHECK(s.status == IBV_WC_SUCCESS);
    ibv_wc r = one(p.eb.recv_cq);
    CHECK(r.status == IBV_WC_SUCCESS);
    CHECK(r.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK(r.byte_len == size);
    CHECK(ntohl(r.imm_data) == imm);
    CHECK(find_mismatch(dst.data, size, size) == -1);
    CHECK(rnr_naks() > stat(before, "rnr_naks_sent"));
    ++imm;
  }
  // The QP is still usable: one more WRITE WITH IMMEDIATE, its receive posted first.
  Buffer src(p.a.pd, 8, kRemote);
  Buffer dst(p.b.pd, 8, kRemote);
  post_recv(p.eb, 50, {});
  REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE_WITH_IMM, 50, {src.sge(0, 8)}, IBV_SEND_SIGNALED,
                    dst.addr(), dst.mr->rkey, 50) == 0);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(one(p.eb.recv_cq).status == IBV_WC_SUCCESS);
}

TEST_CASE("a bad lkey completes with LOC_PROT_ERR and flushes the rest", "[datapath][errors]") {
  Pair p;
  Buffer src(p.a.pd, 64, kRemote);
  Buffer dst(p.b.pd, 64, kRemote);
  ibv_sge bad = src.sge(0, 64);
  bad.lkey ^= 0x100;
  REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE, 1, {bad}, IBV_SEND_SIGNALED, dst.addr(),
                    dst.mr->rkey) == 0);
  REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE, 2, {src.sge(0, 64)}, 0, dst.addr(), dst.mr->rkey) ==
          0);
  auto wcs = wait_completions(p.ea.send_cq, 2, kWait);
  REQUIRE(wcs.size() == 2);
  CHECK(wcs[0].status == IBV_WC_LOC_PROT_ERR);
  // Flushed WRs complete even when unsignaled.
  CHECK(wcs[1].status == IBV_WC_WR_FLUSH_ERR);
  CHECK(wcs[1].wr_id == 2);
  // A READ into memory without LOCAL_WRITE is a local protection error too.
  Pair q;
  Buffer ro(q.a.pd, 64, IBV_ACCESS_REMOTE_READ);
  Buffer remote(q.b.pd, 64, kRemote);
  REQUIRE(post_send(q.ea, IBV_WR_RDMA_READ, 3, {ro.sge(0, 64)}, IBV_SEND_SIGNALED, remote.addr(),
                    remote.mr->rkey) == 0);
  CHECK(one(q.ea.send_cq).status == IBV_WC_LOC_PROT_ERR);
}

TEST_CASE("moving a QP to ERR flushes its receive queue in order", "[datapath][errors]") {
  Pair p;
  Buffer dst(p.b.pd, 64, kRemote);
  for (uint64_t i = 0; i < 5; ++i) {
    post_recv(p.eb, 100 + i, {dst.sge(0, 64)});
  }
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  REQUIRE(ibv_modify_qp(p.eb.qp, &attr, IBV_QP_STATE) == 0);
  CHECK(p.eb.qp->state == IBV_QPS_ERR);
  auto wcs = wait_completions(p.eb.recv_cq, 5, kWait);
  REQUIRE(wcs.size() == 5);
  for (uint64_t i = 0; i < 5; ++i) {
    CHECK(wcs[i].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(wcs[i].wr_id == 100 + i);
  }
  // Posting in ERR is accepted and flushed at once.
  post_recv(p.eb, 200, {dst.sge(0, 64)});
  auto late = wait_completions(p.eb.recv_cq, 1, kWait);
  REQUIRE(late.size() == 1);
  CHECK(late[0].status == IBV_WC_WR_FLUSH_ERR);
  // ERR -> RESET -> INIT works and the QP can be connected again.
  attr.qp_state = IBV_QPS_RESET;
  REQUIRE(ibv_modify_qp(p.eb.qp, &attr, IBV_QP_STATE) == 0);
  CHECK(state_of(p.eb.qp) == IBV_QPS_RESET);
}

TEST_CASE("completion channel: solicited-only and any-completion events", "[datapath]") {
  QpOptions o;
  o.with_channel = true;
  Pair p({}, o);
  Buffer src(p.a.pd, 64, kRemote);
  Buffer dst(p.b.pd, 64, kRemote);
  REQUIRE(ibv_req_notify_cq(p.eb.recv_cq, 1) == 0);  // solicited only
  post_recv(p.eb, 1, {dst.sge(0, 64)});
  post_recv(p.eb, 2, {dst.sge(0, 64)});
  REQUIRE(post_send(p.ea, IBV_WR_SEND, 1, {src.sge(0, 64)}) == 0);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  std::this_thread::sleep_for(100ms);
  pollfd pfd{p.eb.channel->fd, POLLIN, 0};
  CHECK(::poll(&pfd, 1, 0) == 0);  // unsolicited: no event
  REQUIRE(post_send(p.ea, IBV_WR_SEND, 2, {src.sge(0, 64)},
                    IBV_SEND_SIGNALED | IBV_SEND_SOLICITED) == 0);
  REQUIRE(::poll(&pfd, 1, roce::test::kHangBoundMs) == 1);
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  REQUIRE(ibv_get_cq_event(p.eb.channel, &cq, &context) == 0);
  CHECK(cq == p.eb.recv_cq);
  CHECK(context == &p.eb);
  ibv_ack_cq_events(cq, 1);
  CHECK(wait_completions(p.eb.recv_cq, 2, kWait).size() == 2);
  // Any completion after arming without solicited_only.
  REQUIRE(ibv_req_notify_cq(p.eb.recv_cq, 0) == 0);
  post_recv(p.eb, 3, {dst.sge(0, 64)});
  REQUIRE(post_send(p.ea, IBV_WR_SEND, 3, {src.sge(0, 64)}) == 0);
  REQUIRE(ibv_get_cq_event(p.eb.channel, &cq, &context) == 0);
  ibv_ack_cq_events(cq, 1);
  CHECK(one(p.eb.recv_cq).wr_id == 3);
}

TEST_CASE("SQD: no new WQE starts, SQ_DRAINED once the started ones completed, RTS resumes",
          "[datapath]") {
  Pair p;
  Buffer src(p.a.pd, 4096, kRemote);
  Buffer dst(p.b.pd, 4096, kRemote);
  fill_pattern(src.data, 4096, 77);
  // A large WRITE is in flight when SQD is entered: it completes, then the queue has drained.
  Buffer big_src(p.a.pd, 1 << 20, kRemote);
  Buffer big_dst(p.b.pd, 1 << 20, kRemote);
  REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE, 1, {big_src.sge(0, 1 << 20)}, IBV_SEND_SIGNALED,
                    big_dst.addr(), big_dst.mr->rkey) == 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_SQD;
  attr.en_sqd_async_notify = 1;
  REQUIRE(ibv_modify_qp(p.ea.qp, &attr, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0);
  ibv_async_event ev{};
  REQUIRE(wait_async_event(p.a.ctx, &ev, kWait));
  CHECK(ev.event_type == IBV_EVENT_SQ_DRAINED);
  CHECK(ev.element.qp == p.ea.qp);
  ibv_ack_async_event(&ev);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);  // the WRITE in flight completed
  // Posted in SQD: queued, not started.
  std::memset(dst.data, 0, 4096);
  REQUIRE(post_send(p.ea, IBV_WR_RDMA_WRITE, 2, {src.sge(0, 4096)}, IBV_SEND_SIGNALED, dst.addr(),
                    dst.mr->rkey) == 0);
  CHECK(wait_completions(p.ea.send_cq, 1, 300ms).empty());
  CHECK(dst.data[0] == 0);
  attr.qp_state = IBV_QPS_RTS;
  REQUIRE(ibv_modify_qp(p.ea.qp, &attr, IBV_QP_STATE) == 0);
  ibv_wc wc = one(p.ea.send_cq);
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(wc.wr_id == 2);
  CHECK(find_mismatch(dst.data, 4096, 77) == -1);
}

TEST_CASE("a message above the port's max_msg_sz completes with LOC_LEN_ERR",
          "[datapath][errors]") {
  Pair p;
  // 1.5 GiB of address space, registered but never touched (the port's max_msg_sz is 1 GiB).
  size_t big = size_t{3} << 29;
  void* mem = mmap(nullptr, big, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  ibv_mr* mr = ibv_reg_mr(p.a.pd, mem, big, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr != nullptr);
  ibv_sge sge{reinterpret_cast<uint64_t>(mem), static_cast<uint32_t>(big), mr->lkey};
  REQUIRE(post_send(p.ea, IBV_WR_SEND, 1, {sge}) == 0);
  ibv_wc wc = one(p.ea.send_cq);
  CHECK(wc.status == IBV_WC_LOC_LEN_ERR);
  CHECK(state_of(p.ea.qp) == IBV_QPS_ERR);
  CHECK(ibv_dereg_mr(mr) == 0);
  munmap(mem, big);
}

namespace {

// The ICRC as RoCEv2 defines it, computed here with zlib rather than vroce's codec: CRC-32 over
// 8 bytes of 0xFF, the IPv4 header with TOS, TTL and checksum set to ones (vroce sends ID 0 with
// DF), the UDP header with checksum 0xFFFF, the BTH with byte 4 set to 0xFF, and the rest.
uint32_t reference_icrc(uint32_t src, uint32_t dst, uint16_t sport, const std::vector<uint8_t>& p) {
  std::vector<uint8_t> b(8, 0xFF);
  size_t udp_len = 8 + p.size() + 4;
  size_t ip_len = 20 + udp_len;
  uint8_t ip[20] = {0x45,
                    0xFF,
                    static_cast<uint8_t>(ip_len >> 8),
                    static_cast<uint8_t>(ip_len),
                    0,
                    0,
                    0x40,
                    0,
                    0xFF,
                    17,
                    0xFF,
                    0xFF};
  uint32_t s = htonl(src), d = htonl(dst);
  std::memcpy(ip + 12, &s, 4);
  std::memcpy(ip + 16, &d, 4);
  b.insert(b.end(), ip, ip + 20);
  uint8_t udp[8] = {static_cast<uint8_t>(sport >> 8),   static_cast<uint8_t>(sport),   0x12, 0xB7,
                    static_cast<uint8_t>(udp_len >> 8), static_cast<uint8_t>(udp_len), 0xFF, 0xFF};
  b.insert(b.end(), udp, udp + 8);
  size_t bth = b.size();
  b.insert(b.end(), p.begin(), p.end());
  b[bth + 4] = 0xFF;
  return static_cast<uint32_t>(crc32(0, b.data(), static_cast<uInt>(b.size())));
}

// A SEND_ONLY (or any opcode) with 8 payload bytes and a correct ICRC for the flow.
std::vector<uint8_t> packet(uint8_t opcode, uint32_t qpn, uint32_t psn, uint32_t src, uint32_t dst,
                            uint16_t sport) {
  std::vector<uint8_t> p = {opcode,
                            0,
                            0xFF,
                            0xFF,
                            0,
                            static_cast<uint8_t>(qpn >> 16),
                            static_cast<uint8_t>(qpn >> 8),
                            static_cast<uint8_t>(qpn),
                            0x80,
                            static_cast<uint8_t>(psn >> 16),
                            static_cast<uint8_t>(psn >> 8),
                            static_cast<uint8_t>(psn)};
  for (int i = 0; i < 8; ++i) {
    p.push_back(static_cast<uint8_t>(i));
  }
  uint32_t crc = reference_icrc(src, dst, sport, p);
  for (int i = 0; i < 4; ++i) {
    p.push_back(static_cast<uint8_t>(crc >> (8 * i)));  // little-endian
  }
  return p;
}

}  // namespace

TEST_CASE("malformed and stray packets are dropped and counted, never executed",
          "[datapath][errors]") {
  Pair p;
  Buffer dst(p.b.pd, 64, kRemote);
  std::memset(dst.data, 0, 64);
  post_recv(p.eb, 1, {dst.sge(0, 64)});
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in me{};
  me.sin_family = AF_INET;
  me.sin_port = htons(4791);
  inet_pton(AF_INET, test_address(2).c_str(), &me.sin_addr);  // not the responder QP's peer
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof(me)) == 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(4791);
  inet_pton(AF_INET, test_address(1).c_str(), &to.sin_addr);
  const uint32_t from_ip = ntohl(me.sin_addr.s_addr), to_ip = ntohl(to.sin_addr.s_addr);
  uint32_t qpn = p.eb.qp->qp_num;
  auto send = [&](const std::vector<uint8_t>& bytes) {
    REQUIRE(::sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&to),
                     sizeof(to)) == static_cast<ssize_t>(bytes.size()));
  };
  std::string before = stats_json();
  send({0x04, 0, 0xFF});  // shorter than a BTH
  std::vector<uint8_t> corrupt = packet(0x04, qpn, 0, from_ip, to_ip, 4791);
  corrupt[14] ^= 1;  // payload changed after the ICRC
  send(corrupt);
  send(packet(0x04, qpn ^ 0x800000, 0, from_ip, to_ip, 4791));  // no such QP
  send(packet(0x1F, qpn, 0, from_ip, to_ip, 4791));             // not an RC opcode
  send(packet(0x04, qpn, p.ea.psn, from_ip, to_ip, 4791));      // right QP, wrong sender
  auto deadline = std::chrono::steady_clock::now() + kWait;
  auto delta = [&](const char* path) { return stat(stats_json(), path) - stat(before, path); };
  while (delta("drops.wrong_peer") == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(delta("drops.truncated") == 1);
  CHECK(delta("drops.bad_icrc") == 1);  // the reference ICRC matches vroce's: only this one
  CHECK(delta("drops.unknown_qpn") == 1);
  CHECK(delta("drops.unknown_opcode") == 1);
  CHECK(delta("drops.wrong_peer") == 1);
  // Nothing reached the receive queue or memory, and the QP still works.
  CHECK(wait_completions(p.eb.recv_cq, 1, 200ms).empty());
  CHECK(dst.data[0] == 0);
  Buffer src(p.a.pd, 64, kRemote);
  fill_pattern(src.data, 64, 3);
  REQUIRE(post_send(p.ea, IBV_WR_SEND, 9, {src.sge(0, 64)}) == 0);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(one(p.eb.recv_cq).status == IBV_WC_SUCCESS);
  CHECK(find_mismatch(dst.data, 64, 3) == -1);
  ::close(fd);
}
