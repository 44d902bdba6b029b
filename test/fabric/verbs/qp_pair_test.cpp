// A QP pair on two vroce devices: RESET -> INIT -> RTR -> RTS with the GRH, the traffic class
// read back after RTR, one RDMA WRITE WITH IMMEDIATE across, and teardown with draining.
#include <arpa/inet.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "connected_pair.h"
#include "core/device/device_discovery.h"
#include "test_addresses.h"
#include "verbs/completion_queue.h"
#include "verbs/memory_region.h"
#include "verbs/protection_domain.h"
#include "verbs/queue_pair.h"
#include "vroce_process.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace roce;
using namespace std::chrono_literals;
using test::make_side;
using test::Side;
using test::wait_for_completion;

namespace {
constexpr uint8_t kTrafficClass = 106;  // DSCP 26 + ECT(0), a common lossless-class marking
}  // namespace

TEST_CASE("a QP pair on two vroce devices reaches RTS, keeps its class and moves data",
          "[qp][vroce]") {
  const auto lib = test::load_vroce(vroce_device_list({"pv0", "pv1"}));
  const DiscoveryResult found =
      test::value_of(discover_devices(lib, DiscoveryOptions::from_config(test::config_from_env())));
  REQUIRE(found.devices.size() == 2);
  Side a = make_side(found.devices[0]);
  Side b = make_side(found.devices[1]);

  a.qp->to_rtr(test::rtr_towards(a, b, kTrafficClass));
  b.qp->to_rtr(test::rtr_towards(b, a, kTrafficClass));
  CHECK(a.qp->state() == IBV_QPS_RTR);
  CHECK(a.qp->query_traffic_class() == kTrafficClass);
  CHECK(b.qp->query_traffic_class() == kTrafficClass);
  verbs::RtsAttributes rts;
  rts.timeout = 14;
  a.qp->to_rts(rts);
  b.qp->to_rts(rts);
  CHECK(a.qp->state() == IBV_QPS_RTS);
  CHECK(b.qp->state() == IBV_QPS_RTS);

  std::vector<uint8_t> source(8192);
  std::vector<uint8_t> target(8192, 0);
  for (size_t i = 0; i < source.size(); ++i) {
    source[i] = static_cast<uint8_t>(i * 7 + 3);
  }
  auto source_mr = verbs::MemoryRegion::register_memory(a.pd, source.data(), source.size(),
                                                        IBV_ACCESS_LOCAL_WRITE);
  auto target_mr = verbs::MemoryRegion::register_memory(
      b.pd, target.data(), target.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

  ibv_recv_wr recv{};
  recv.wr_id = 77;
  ibv_recv_wr* bad_recv = nullptr;
  REQUIRE(b.qp->post_recv(&recv, &bad_recv) == 0);

  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(source.data());
  sge.length = static_cast<uint32_t>(source.size());
  sge.lkey = source_mr->lkey();
  ibv_send_wr send{};
  send.wr_id = 55;
  send.sg_list = &sge;
  send.num_sge = 1;
  send.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  send.send_flags = IBV_SEND_SIGNALED;
  send.imm_data = htonl(0x1234);
  send.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(target.data());
  send.wr.rdma.rkey = target_mr->rkey();
  ibv_send_wr* bad_send = nullptr;
  REQUIRE(a.qp->post_send(&send, &bad_send) == 0);

  const ibv_wc sent = wait_for_completion(*a.cq);
  CHECK(sent.status == IBV_WC_SUCCESS);
  CHECK(sent.wr_id == 55);
  const ibv_wc received = wait_for_completion(*b.cq);
  CHECK(received.status == IBV_WC_SUCCESS);
  CHECK(received.wr_id == 77);
  CHECK(received.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
  CHECK(ntohl(received.imm_data) == 0x1234);
  CHECK(received.byte_len == source.size());
  CHECK(target == source);

  // Outstanding receives are flushed by teardown; nothing of them is left on the CQ.
  REQUIRE(b.qp->post_recv(&recv, &bad_recv) == 0);
  b.qp.reset();
  ibv_wc leftover{};
  CHECK(b.cq->poll(1, &leftover) == 0);
}
