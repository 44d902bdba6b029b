// The verbs objects in one process on one vroce device (vrO on the process's first test address,
// set by main): memory registration rules (access, bounds, mapping, dma-buf), PD/CQ/channel busy
// rules, CQ sizes and overrun, QP creation caps, modify_qp refusals that leave the QP unchanged,
// and post-time errors with *bad_wr.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <thread>

#include "hang_bound.h"
#include "harness.h"
#include "test_addresses.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace vroce_test;
using namespace std::chrono_literals;

namespace {

constexpr unsigned kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

ibv_qp* make_qp(Device& d, ibv_cq* cq, ibv_qp_init_attr* init_out = nullptr, uint32_t send_wr = 4,
                uint32_t inline_data = 64) {
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap.max_send_wr = send_wr;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 2;
  init.cap.max_recv_sge = 2;
  init.cap.max_inline_data = inline_data;
  init.qp_type = IBV_QPT_RC;
  ibv_qp* qp = ibv_create_qp(d.pd, &init);
  if (init_out != nullptr) {
    *init_out = init;
  }
  return qp;
}

ibv_qp_attr query(ibv_qp* qp) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  REQUIRE(ibv_query_qp(qp, &attr, 0, &init) == 0);
  return attr;
}

int to_init(ibv_qp* qp) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

ibv_qp_attr rtr_attr(const Device& d, uint32_t dest_qpn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest_qpn;
  a.rq_psn = 5;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.dgid = d.gid;
  a.ah_attr.grh.sgid_index = static_cast<uint8_t>(d.gid_index);
  a.ah_attr.grh.hop_limit = 64;
  return a;
}

constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

}  // namespace

TEST_CASE("ibv_reg_mr: access rules, mapping, bounds, keys", "[objects][mr]") {
  Device d("vrO");
  std::vector<uint8_t> mem(8192);
  ibv_mr* mr = ibv_reg_mr(d.pd, mem.data(), mem.size(), kAll);
  REQUIRE(mr != nullptr);
  CHECK(mr->addr == mem.data());
  CHECK(mr->length == mem.size());
  CHECK(mr->lkey == mr->rkey);
  CHECK(mr->lkey != 0);
  CHECK(mr->pd == d.pd);
  CHECK(mr->context == d.ctx);

  errno = 0;
  CHECK(ibv_reg_mr(d.pd, mem.data(), mem.size(), IBV_ACCESS_REMOTE_WRITE) == nullptr);
  CHECK(errno == EINVAL);  // remote write needs local write
  errno = 0;
  CHECK(ibv_reg_mr(d.pd, mem.data(), mem.size(),
                   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ) == nullptr);
  CHECK(errno == EINVAL);
  errno = 0;
  CHECK(ibv_reg_mr(d.pd, mem.data(), 0, IBV_ACCESS_LOCAL_WRITE) == nullptr);
  CHECK(errno == EINVAL);
  errno = 0;
  CHECK(ibv_reg_mr(d.pd, mem.data(), mem.size(), IBV_ACCESS_ON_DEMAND) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  errno = 0;
  CHECK(ibv_reg_mr(d.pd, mem.data(), mem.size(), 1 << 12) == nullptr);  // unknown bit
  CHECK(errno == EINVAL);
  // Unmapped memory cannot be pinned.
  long page = sysconf(_SC_PAGESIZE);
  void* hole = mmap(nullptr, static_cast<size_t>(page) * 3, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(hole != MAP_FAILED);
  munmap(static_cast<char*>(hole) + page, static_cast<size_t>(page));
  errno = 0;
  CHECK(ibv_reg_mr(d.pd, hole, static_cast<size_t>(page) * 3, IBV_ACCESS_LOCAL_WRITE) == nullptr);
  CHECK(errno == EFAULT);
  munmap(hole, static_cast<size_t>(page));
  munmap(static_cast<char*>(hole) + 2 * page, static_cast<size_t>(page));
  // Optional access bits (relaxed ordering) are accepted through ibv_reg_mr_iova2.
  ibv_mr* relaxed = ibv_reg_mr_iova2(d.pd, mem.data(), 4096, 0x10000,
                                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
  REQUIRE(relaxed != nullptr);
  CHECK(relaxed->lkey != mr->lkey);
  // The dealloc of a PD with live MRs is refused.
  CHECK(ibv_dealloc_pd(d.pd) == EBUSY);
  uint32_t old_keys[2] = {mr->lkey, relaxed->lkey};
  CHECK(ibv_dereg_mr(relaxed) == 0);
  CHECK(ibv_dereg_mr(mr) == 0);
  // A new registration does not reuse an old key (the slot's tag moved on).
  ibv_mr* again = ibv_reg_mr(d.pd, mem.data(), mem.size(), kAll);
  REQUIRE(again != nullptr);
  CHECK(again->lkey != old_keys[0]);
  CHECK(again->lkey != old_keys[1]);
  CHECK(ibv_dereg_mr(again) == 0);
  // rereg is not implemented: the caller is told so.
  CHECK(ibv_rereg_mr(nullptr, 0, nullptr, nullptr, 0, 0) == IBV_REREG_MR_ERR_INPUT);
}

TEST_CASE("ibv_reg_dmabuf_mr: fd -1 is EBADF, a mappable fd is registered", "[objects][mr]") {
  Device d("vrO");
  errno = 0;
  CHECK(ibv_reg_dmabuf_mr(d.pd, 0, 4096, 0x1000, -1, IBV_ACCESS_LOCAL_WRITE) == nullptr);
  CHECK(errno == EBADF);
  // A memfd stands in for an exporter's dma-buf: both are mappable shared memory.
  int fd = memfd_create("vroce-dmabuf", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, 3 * 4096) == 0);
  ibv_mr* mr = ibv_reg_dmabuf_mr(d.pd, 4096 + 100, 4096, 0xABC000, fd, static_cast<int>(kAll));
  REQUIRE(mr != nullptr);
  // As rdma-core sets it: addr is the offset into the dma-buf (work requests use the iova).
  CHECK(reinterpret_cast<uintptr_t>(mr->addr) == 4096 + 100);
  // vroce does not keep the fd: closing it leaves the region usable.
  close(fd);
  CHECK(ibv_dereg_mr(mr) == 0);
  errno = 0;
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  CHECK(ibv_reg_dmabuf_mr(d.pd, 0, 4096, 0x1000, pipe_fds[0], IBV_ACCESS_LOCAL_WRITE) == nullptr);
  CHECK(errno != 0);  // a pipe cannot be mapped
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST_CASE("CQs: sizes rounded up, busy while used, completion channels busy while used",
          "[objects][cq]") {
  Device d("vrO");
  ibv_cq* cq = ibv_create_cq(d.ctx, 100, nullptr, nullptr, 0);
  REQUIRE(cq != nullptr);
  CHECK(cq->cqe >= 100);
  CHECK(ibv_resize_cq(cq, 1000) == 0);
  CHECK(cq->cqe >= 1000);
  errno = 0;
  CHECK(ibv_create_cq(d.ctx, 0, nullptr, nullptr, 0) == nullptr);
  CHECK(errno == EINVAL);
  CHECK(ibv_create_cq(d.ctx, 1 << 30, nullptr, nullptr, 0) == nullptr);
  CHECK(ibv_create_cq(d.ctx, 16, nullptr, nullptr, 5) == nullptr);  // no such vector
  ibv_comp_channel* channel = ibv_create_comp_channel(d.ctx);
  REQUIRE(channel != nullptr);
  ibv_cq* with_channel = ibv_create_cq(d.ctx, 16, nullptr, channel, 0);
  REQUIRE(with_channel != nullptr);
  CHECK(ibv_destroy_comp_channel(channel) == EBUSY);
  ibv_qp* qp = make_qp(d, cq);
  REQUIRE(qp != nullptr);
  CHECK(ibv_destroy_cq(cq) == EBUSY);
  CHECK(ibv_dealloc_pd(d.pd) == EBUSY);
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
  CHECK(ibv_destroy_cq(with_channel) == 0);
  CHECK(ibv_destroy_comp_channel(channel) == 0);
}

TEST_CASE("a CQ overrun raises IBV_EVENT_CQ_ERR", "[objects][cq]") {
  Device d("vrO");
  ibv_cq* cq = ibv_create_cq(d.ctx, 1, nullptr, nullptr, 0);
  REQUIRE(cq != nullptr);
  int capacity = cq->cqe;
  ibv_qp* qp = make_qp(d, cq, nullptr, 4);
  REQUIRE(qp != nullptr);
  REQUIRE(to_init(qp) == 0);
  std::vector<uint8_t> mem(64);
  ibv_mr* mr = ibv_reg_mr(d.pd, mem.data(), mem.size(), kAll);
  // Receives flushed by the ERR transition overflow the CQ.
  ibv_sge sge{reinterpret_cast<uint64_t>(mem.data()), 64, mr->lkey};
  for (int i = 0; i < 4; ++i) {
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_recv(qp, &wr, &bad) == 0);
  }
  REQUIRE(capacity < 4);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
  ibv_async_event ev{};
  REQUIRE(wait_async_event(d.ctx, &ev, roce::test::kHangBound));
  CHECK(ev.event_type == IBV_EVENT_CQ_ERR);
  CHECK(ev.element.cq == cq);
  ibv_ack_async_event(&ev);
  CHECK(stat(stats_json(), "cq_overruns") > 0);
  ibv_wc wc[8];
  CHECK(ibv_poll_cq(cq, 8, wc) == capacity);
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_qp: RC only, caps checked and rounded up, query reports them",
          "[objects][qp]") {
  Device d("vrO");
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  REQUIRE(cq != nullptr);
  ibv_qp_init_attr init{};
  ibv_qp* qp = make_qp(d, cq, &init, 5, 33);
  REQUIRE(qp != nullptr);
  CHECK(init.cap.max_send_wr >= 5);
  CHECK(init.cap.max_inline_data >= 33);
  CHECK(qp->qp_num != 0);
  CHECK(qp->qp_num <= 0xFFFFFF);
  CHECK(qp->state == IBV_QPS_RESET);
  CHECK(qp->qp_type == IBV_QPT_RC);
  ibv_qp_attr attr{};
  ibv_qp_init_attr got{};
  REQUIRE(ibv_query_qp(qp, &attr, IBV_QP_CAP, &got) == 0);
  CHECK(got.cap.max_send_wr == init.cap.max_send_wr);
  CHECK(attr.cap.max_inline_data == init.cap.max_inline_data);
  CHECK(attr.qp_state == IBV_QPS_RESET);

  ibv_qp_init_attr ud{};
  ud.send_cq = cq;
  ud.recv_cq = cq;
  ud.cap.max_send_wr = 1;
  ud.cap.max_recv_wr = 1;
  ud.qp_type = IBV_QPT_UD;
  errno = 0;
  CHECK(ibv_create_qp(d.pd, &ud) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  ibv_qp_init_attr big = ud;
  big.qp_type = IBV_QPT_RC;
  big.cap.max_send_sge = 1000;
  errno = 0;
  CHECK(ibv_create_qp(d.pd, &big) == nullptr);
  CHECK(errno == EINVAL);
  big.cap.max_send_sge = 1;
  big.cap.max_inline_data = 1 << 20;
  CHECK(ibv_create_qp(d.pd, &big) == nullptr);
  // SRQs and address handles do not exist here, honestly.
  ibv_srq_init_attr srq{};
  srq.attr.max_wr = 4;
  srq.attr.max_sge = 1;
  errno = 0;
  CHECK(ibv_create_srq(d.pd, &srq) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  CHECK(ibv_qp_to_qp_ex(qp) == nullptr);
  CHECK(ibv_query_qp_data_in_order(qp, IBV_WR_RDMA_WRITE, 0) == 1);
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ECE as on mlx5: supported options, set before RTR, reduced from RTR on",
          "[objects][qp][ece]") {
  Device d("vrO");
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_qp* qp = make_qp(d, cq);
  REQUIRE(qp != nullptr);
  ibv_ece ece{};
  REQUIRE(ibv_query_ece(qp, &ece) == 0);
  CHECK(ece.vendor_id == 0x15b3);
  CHECK(ece.options == 0x30000002);  // VROCE_ECE's default
  CHECK(ece.comp_mask == 0);
  REQUIRE(to_init(qp) == 0);
  ibv_ece other_vendor{0x10de, 0x30000002, 0};
  CHECK(ibv_set_ece(qp, &other_vendor) == EINVAL);
  ibv_ece with_mask{0x15b3, 0x30000002, 1};
  CHECK(ibv_set_ece(qp, &with_mask) == EINVAL);
  ibv_ece peer{0x15b3, 0x10000006, 0};
  REQUIRE(ibv_set_ece(qp, &peer) == 0);
  REQUIRE(ibv_query_ece(qp, &ece) == 0);
  CHECK(ece.options == 0x30000002);  // applied at RTR
  ibv_qp_attr a = rtr_attr(d, qp->qp_num);
  REQUIRE(ibv_modify_qp(qp, &a, kRtrMask) == 0);
  REQUIRE(ibv_query_ece(qp, &ece) == 0);
  CHECK(ece.options == 0x10000002);         // what both support
  CHECK(ibv_set_ece(qp, &peer) == EINVAL);  // too late
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_modify_qp: refusals are EINVAL and leave the QP as it was", "[objects][qp]") {
  Device d("vrO");
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_qp* qp = make_qp(d, cq);
  REQUIRE(qp != nullptr);
  REQUIRE(to_init(qp) == 0);
  CHECK(qp->state == IBV_QPS_INIT);
  ibv_qp_attr before = query(qp);

  ibv_qp_attr a = rtr_attr(d, qp->qp_num);
  a.path_mtu = IBV_MTU_4096;
  a.ah_attr.is_global = 0;  // no GRH on RoCE
  CHECK(ibv_modify_qp(qp, &a, kRtrMask) == EINVAL);
  a = rtr_attr(d, qp->qp_num);
  CHECK(ibv_modify_qp(qp, &a, kRtrMask & ~IBV_QP_MIN_RNR_TIMER) == EINVAL);  // required bit
  a.ah_attr.grh.sgid_index = static_cast<uint8_t>(d.gid_index - 1);          // its RoCEv1 twin
  CHECK(ibv_modify_qp(qp, &a, kRtrMask) == EINVAL);
  a = rtr_attr(d, qp->qp_num);
  a.max_dest_rd_atomic = 200;
  CHECK(ibv_modify_qp(qp, &a, kRtrMask) == EINVAL);
  a = rtr_attr(d, qp->qp_num);
  a.ah_attr.grh.dgid.raw[12] = 10;  // 10.0.3.10: no route from the loopback device address
  a.ah_attr.grh.dgid.raw[13] = 255;
  a.ah_attr.grh.dgid.raw[14] = 255;
  a.ah_attr.grh.dgid.raw[15] = 1;
  int unreachable = ibv_modify_qp(qp, &a, kRtrMask);
  CHECK(unreachable == EINVAL);
  ibv_qp_attr after = query(qp);
  CHECK(after.qp_state == IBV_QPS_INIT);
  CHECK(std::memcmp(&before, &after, sizeof(before)) == 0);
  CHECK(qp->state == IBV_QPS_INIT);

  // The legal transition still works afterwards, and the state field follows.
  a = rtr_attr(d, qp->qp_num);
  REQUIRE(ibv_modify_qp(qp, &a, kRtrMask) == 0);
  CHECK(qp->state == IBV_QPS_RTR);
  ibv_qp_attr rtr = query(qp);
  CHECK(rtr.rq_psn == 5);
  CHECK(rtr.dest_qp_num == qp->qp_num);
  CHECK(rtr.path_mtu == IBV_MTU_1024);
  CHECK(rtr.ah_attr.grh.hop_limit == 64);
  // RTR -> RTS with a retry count out of range is refused.
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = 14;
  rts.retry_cnt = 9;
  rts.rnr_retry = 7;
  rts.max_rd_atomic = 1;
  int rts_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  CHECK(ibv_modify_qp(qp, &rts, rts_mask) == EINVAL);
  CHECK(query(qp).qp_state == IBV_QPS_RTR);
  rts.retry_cnt = 7;
  CHECK(ibv_modify_qp(qp, &rts, rts_mask) == 0);
  CHECK(qp->state == IBV_QPS_RTS);
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("post errors: the errno rdma-core documents and *bad_wr at the failing WR",
          "[objects][post]") {
  Device d("vrO");
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_qp* qp = make_qp(d, cq, nullptr, 16, 16);
  REQUIRE(qp != nullptr);
  std::vector<uint8_t> mem(4096);
  ibv_mr* mr = ibv_reg_mr(d.pd, mem.data(), mem.size(), kAll);
  ibv_sge sge{reinterpret_cast<uint64_t>(mem.data()), 64, mr->lkey};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  // Send before RTS.
  CHECK(ibv_post_send(qp, &wr, &bad) == EINVAL);
  CHECK(bad == &wr);
  // Receives need INIT.
  ibv_recv_wr rwr{};
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  CHECK(ibv_post_recv(qp, &rwr, &rbad) == EINVAL);
  CHECK(rbad == &rwr);
  REQUIRE(to_init(qp) == 0);
  CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0);
  rwr.num_sge = 3;  // above max_recv_sge
  CHECK(ibv_post_recv(qp, &rwr, &rbad) == EINVAL);
  CHECK(rbad == &rwr);
  // A full receive queue: the WR that does not fit is the bad one.
  rwr.num_sge = 1;
  ibv_recv_wr chain[8]{};
  for (int i = 0; i < 8; ++i) {
    chain[i] = rwr;
    chain[i].wr_id = static_cast<uint64_t>(i);
    chain[i].next = i < 7 ? &chain[i + 1] : nullptr;
  }
  int rc = ibv_post_recv(qp, chain, &rbad);
  CHECK(rc == ENOMEM);
  REQUIRE(rbad != nullptr);
  CHECK(rbad->wr_id == 3);  // 1 posted before + 3 fill the 4 slots

  // Into RTS on a self-connected path to test send-side checks.
  ibv_qp_attr a = rtr_attr(d, qp->qp_num);
  REQUIRE(ibv_modify_qp(qp, &a, kRtrMask) == 0);
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = 14;
  rts.retry_cnt = 7;
  rts.rnr_retry = 7;
  rts.max_rd_atomic = 0;
  REQUIRE(ibv_modify_qp(qp, &rts,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                            IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
  ibv_send_wr second = wr;
  wr.next = &second;
  second.num_sge = 5;  // above max_send_sge
  CHECK(ibv_post_send(qp, &wr, &bad) == EINVAL);
  CHECK(bad == &second);
  second.num_sge = 1;
  second.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;  // the device reports atomic_cap NONE
  CHECK(ibv_post_send(qp, &wr, &bad) == EINVAL);
  CHECK(bad == &second);
  second.opcode = IBV_WR_RDMA_READ;  // max_rd_atomic is 0: no READ can ever be issued
  CHECK(ibv_post_send(qp, &second, &bad) == EINVAL);
  second.opcode = IBV_WR_SEND;
  second.send_flags = IBV_SEND_INLINE;
  sge.length = 100;  // above max_inline_data
  CHECK(ibv_post_send(qp, &second, &bad) == EINVAL);
  CHECK(bad == &second);
  CHECK(ibv_destroy_qp(qp) == 0);
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("the live-object counters return to zero", "[objects]") {
  {
    Device d("vrO");
    ibv_cq* cq = ibv_create_cq(d.ctx, 8, nullptr, nullptr, 0);
    ibv_qp* qp = make_qp(d, cq);
    std::string during = stats_json();
    CHECK(stat(during, "live.qps") == 1);
    CHECK(stat(during, "live.cqs") == 1);
    CHECK(stat(during, "live.pds") == 1);
    CHECK(stat(during, "live.engines") == 1);
    ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
  }
  std::string after = stats_json();
  CHECK(stat(after, "live.qps") == 0);
  CHECK(stat(after, "live.cqs") == 0);
  CHECK(stat(after, "live.pds") == 0);
  CHECK(stat(after, "live.mrs") == 0);
  CHECK(stat(after, "live.engines") == 0);  // the last QP stopped the progress thread
}

TEST_CASE("a device address whose UDP port 4791 is taken: ibv_create_qp fails with EADDRINUSE",
          "[objects][qp]") {
  // Stands in for another process that owns the device.
  int squatter = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(squatter >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(4791);
  inet_pton(AF_INET, test_address(0).c_str(), &addr.sin_addr);
  REQUIRE(::bind(squatter, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  {
    Device d("vrO");
    ibv_cq* cq = ibv_create_cq(d.ctx, 8, nullptr, nullptr, 0);
    errno = 0;
    CHECK(make_qp(d, cq) == nullptr);
    CHECK(errno == EADDRINUSE);
    CHECK(stat(stats_json(), "live.engines") == 0);
    ::close(squatter);
    // Once the port is free the device works again.
    ibv_qp* qp = make_qp(d, cq);
    CHECK(qp != nullptr);
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
  }
}

TEST_CASE("ibv_close_device returns 0 and releases what the program left, as rdma-core does",
          "[objects][close]") {
  // rdma-core's ibv_close_device returns 0 whatever is left and the kernel reclaims the
  // children; perftest's ib_send_bw never destroys its receive CQ and checks the return value.
  std::string before = stats_json();
  uint64_t qps = stat(before, "live.qps");
  uint64_t cqs = stat(before, "live.cqs");
  uint64_t mrs = stat(before, "live.mrs");
  uint64_t pds = stat(before, "live.pds");
  uint64_t channels = stat(before, "live.comp_channels");
  {
    Device d("vrO");
    ibv_comp_channel* channel = ibv_create_comp_channel(d.ctx);
    REQUIRE(channel != nullptr);
    ibv_cq* with_channel = ibv_create_cq(d.ctx, 16, nullptr, channel, 0);
    REQUIRE(with_channel != nullptr);
    ibv_cq* cq = ibv_create_cq(d.ctx, 1, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_qp* qp = make_qp(d, cq);
    REQUIRE(qp != nullptr);
    REQUIRE(to_init(qp) == 0);
    std::vector<uint8_t> mem(4096);
    ibv_mr* mr = ibv_reg_mr(d.pd, mem.data(), mem.size(), kAll);
    REQUIRE(mr != nullptr);
    // A delivered, never acknowledged async event (a CQ overrun from flushed receives) must not
    // make the release wait forever, as destroying the CQ would.
    ibv_sge sge{reinterpret_cast<uint64_t>(mem.data()), 64, mr->lkey};
    for (int i = 0; i < 4; ++i) {
      ibv_recv_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      REQUIRE(ibv_post_recv(qp, &wr, &bad) == 0);
    }
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
    ibv_async_event ev{};
    REQUIRE(wait_async_event(d.ctx, &ev, roce::test::kHangBound));
    std::string during = stats_json();
    CHECK(stat(during, "live.qps") == qps + 1);
    CHECK(stat(during, "live.mrs") == mrs + 1);
    CHECK(ibv_close_device(d.ctx) == 0);
    d.ctx = nullptr;
    d.pd = nullptr;  // released with the context
  }
  std::string after = stats_json();
  CHECK(stat(after, "live.qps") == qps);
  CHECK(stat(after, "live.cqs") == cqs);
  CHECK(stat(after, "live.mrs") == mrs);
  CHECK(stat(after, "live.pds") == pds);
  CHECK(stat(after, "live.comp_channels") == channels);
}
