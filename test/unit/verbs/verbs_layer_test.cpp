// The RAII owners and QP transitions over an in-memory provider (fake_verbs.h).
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "fake_verbs.h"
#include "ibv/port_query.h"
#include "util/config.h"
#include "verbs/completion_queue.h"
#include "verbs/context.h"
#include "verbs/device_list.h"
#include "verbs/error.h"
#include "verbs/memory_region.h"
#include "verbs/protection_domain.h"
#include "verbs/queue_pair.h"

using namespace roce;
using namespace roce::verbs;
using roce::test::FakeVerbs;

namespace {

struct Stack {
  std::shared_ptr<Context> context;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
};

Stack open_stack(FakeVerbs& fake) {
  auto lib = fake.library();
  DeviceList list(lib);
  REQUIRE(list.devices().size() == 1);
  Stack s;
  s.context = Context::open(lib, list.devices()[0]);
  s.pd = ProtectionDomain::create(s.context);
  s.cq = CompletionQueue::create(s.context, 64);
  return s;
}

RtrAttributes rtr_to(uint32_t qpn, uint8_t traffic_class) {
  RtrAttributes rtr;
  rtr.dgid.raw[10] = 0xff;
  rtr.dgid.raw[11] = 0xff;
  rtr.dgid.raw[12] = 127;
  rtr.dgid.raw[15] = 1;
  rtr.sgid_index = 3;
  rtr.traffic_class = traffic_class;
  rtr.service_level = 3;
  rtr.path_mtu = IBV_MTU_1024;
  rtr.dest_qpn = qpn;
  rtr.rq_psn = 0x10;
  return rtr;
}

std::unique_ptr<QueuePair> rts_qp(const Stack& s, uint8_t traffic_class = 104) {
  auto qp = QueuePair::create_rc(s.pd, s.cq, s.cq, QpCapabilities{});
  qp->to_init({0, 1, IBV_ACCESS_REMOTE_WRITE});
  qp->to_rtr(rtr_to(qp->qp_num(), traffic_class));
  qp->to_rts({});
  return qp;
}

}  // namespace

TEST_CASE("children keep their parents alive and are destroyed first", "[verbs]") {
  FakeVerbs fake;
  std::unique_ptr<QueuePair> qp;
  std::unique_ptr<MemoryRegion> mr;
  {
    Stack s = open_stack(fake);
    qp = QueuePair::create_rc(s.pd, s.cq, s.cq, QpCapabilities{});
    static char buffer[64];
    mr = MemoryRegion::register_memory(s.pd, buffer, sizeof(buffer), IBV_ACCESS_LOCAL_WRITE);
  }  // the stack's own references are gone; the QP and MR still hold everything
  CHECK(fake.open_contexts == 1);
  CHECK(fake.live_pds == 1);
  CHECK(fake.live_cqs == 1);
  qp.reset();
  CHECK(fake.live_qps == 0);
  CHECK(fake.live_cqs == 0);  // the QP held the last reference to the CQ
  CHECK(fake.live_pds == 1);  // the MR still holds the PD
  mr.reset();
  CHECK(fake.destroy_order == std::vector<std::string>{"qp", "cq", "mr", "pd", "context"});
  CHECK(fake.open_contexts == 0);
}

TEST_CASE("QP transitions pass the attribute masks and values verbs requires", "[verbs]") {
  FakeVerbs fake;
  Stack s = open_stack(fake);
  auto qp = rts_qp(s);
  REQUIRE(fake.modify_calls.size() == 3);
  const auto& init = fake.modify_calls[0];
  CHECK(init.mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
  CHECK(init.attr.qp_state == IBV_QPS_INIT);
  CHECK(init.attr.port_num == 1);
  CHECK(init.attr.qp_access_flags == IBV_ACCESS_REMOTE_WRITE);

  const auto& rtr = fake.modify_calls[1];
  CHECK(rtr.mask == (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
  CHECK(rtr.attr.ah_attr.is_global == 1);
  CHECK(rtr.attr.ah_attr.grh.sgid_index == 3);
  CHECK(rtr.attr.ah_attr.grh.hop_limit == 255);
  CHECK(rtr.attr.ah_attr.grh.traffic_class == 104);
  CHECK(rtr.attr.ah_attr.grh.flow_label == 0);
  CHECK(rtr.attr.ah_attr.grh.dgid.raw[12] == 127);
  CHECK(rtr.attr.ah_attr.sl == 3);
  CHECK(rtr.attr.ah_attr.port_num == 1);
  CHECK(rtr.attr.path_mtu == IBV_MTU_1024);
  CHECK(rtr.attr.rq_psn == 0x10);
  CHECK(rtr.attr.max_dest_rd_atomic == 1);
  CHECK(rtr.attr.min_rnr_timer == 12);

  const auto& rts = fake.modify_calls[2];
  CHECK(rts.mask == (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
  CHECK(rts.attr.timeout == 20);
  CHECK(rts.attr.retry_cnt == 7);
  CHECK(rts.attr.rnr_retry == 7);
  CHECK(rts.attr.max_rd_atomic == 1);
  CHECK(qp->state() == IBV_QPS_RTS);
  CHECK(qp->query_traffic_class() == 104);
}

TEST_CASE("a class the device reads back differently after RTR is an error naming both",
          "[verbs]") {
  FakeVerbs fake;
  Stack s = open_stack(fake);
  fake.tc_rewrite = 236;  // as mlx5's global tclass would
  auto qp = QueuePair::create_rc(s.pd, s.cq, s.cq, QpCapabilities{});
  qp->to_init({0, 1, IBV_ACCESS_REMOTE_WRITE});
  CHECK_THROWS_WITH(qp->to_rtr(rtr_to(qp->qp_num(), 104)),
                    Catch::Contains("read back after RTR is 236 (dscp 59)") &&
                        Catch::Contains("but 104 (dscp 26) was requested") &&
                        Catch::Contains("tc/1/traffic_class"));
}

TEST_CASE("a refused transition names the QP, the transition, the attributes and errno",
          "[verbs]") {
  FakeVerbs fake;
  Stack s = open_stack(fake);
  auto qp = QueuePair::create_rc(s.pd, s.cq, s.cq, QpCapabilities{});
  qp->to_init({0, 1, IBV_ACCESS_REMOTE_WRITE});
  fake.modify_error = EINVAL;
  try {
    qp->to_rtr(rtr_to(0x77, 104));
    FAIL("to_rtr should have thrown");
  } catch (const VerbsError& e) {
    const std::string what = e.what();
    CHECK(e.error_number() == EINVAL);
    CHECK(what.find(fmt::format("qp 0x{:x} on fake0 port 1", qp->qp_num())) == 0);
    CHECK(what.find("INIT->RTR failed") != std::string::npos);
    CHECK(what.find("EINVAL (Invalid argument)") != std::string::npos);
    CHECK(what.find("sgid_index 3") != std::string::npos);
    CHECK(what.find("NCCL_IB_GID_INDEX") != std::string::npos);
  }
  CHECK(qp->state() == IBV_QPS_INIT);
}

TEST_CASE("ibv_modify_qp is retried on ETIMEDOUT up to NCCL_IB_MQP_RETRY_CNT, as NCCL does",
          "[verbs]") {
  setenv("NCCL_IB_MQP_RETRY_CNT", "3", 1);
  setenv("NCCL_IB_MQP_RETRY_SLEEP_MSEC", "1", 1);
  REQUIRE(roce::load_config());
  FakeVerbs fake;
  Stack s = open_stack(fake);
  auto qp = QueuePair::create_rc(s.pd, s.cq, s.cq, QpCapabilities{});
  qp->to_init({0, 1, IBV_ACCESS_REMOTE_WRITE});
  const size_t before = fake.modify_calls.size();
  fake.modify_timeouts = 3;  // address resolution finishes on the 4th attempt
  qp->to_rtr(rtr_to(0x77, 104));
  CHECK(qp->state() == IBV_QPS_RTR);
  CHECK(fake.modify_calls.size() - before == 4);

  fake.modify_timeouts = 4;  // one more than the retries allowed
  try {
    qp->to_rts({});
    FAIL("to_rts should have thrown");
  } catch (const VerbsError& e) {
    CHECK(e.error_number() == ETIMEDOUT);
    CHECK(std::string(e.what()).find("after 3 retries (NCCL_IB_MQP_RETRY_CNT)") !=
          std::string::npos);
  }
  // Other errors are not retried unless NCCL_IB_MQP_RETRY_ALL=1.
  fake.modify_timeouts = 0;
  fake.modify_error = EINVAL;
  const size_t calls = fake.modify_calls.size();
  CHECK_THROWS_AS(qp->to_rts({}), VerbsError);
  CHECK(fake.modify_calls.size() - calls == 1);
  unsetenv("NCCL_IB_MQP_RETRY_CNT");
  unsetenv("NCCL_IB_MQP_RETRY_SLEEP_MSEC");
  REQUIRE(roce::load_config());
}

TEST_CASE("bad attributes are refused before reaching the device", "[verbs]") {
  FakeVerbs fake;
  Stack s = open_stack(fake);
  auto qp = QueuePair::create_rc(s.pd, s.cq, s.cq, QpCapabilities{});
  qp->to_init({0, 1, IBV_ACCESS_REMOTE_WRITE});
  fake.modify_calls.clear();
  RtrAttributes rtr = rtr_to(0x77, 104);
  rtr.dest_qpn = 0;
  CHECK_THROWS_WITH(qp->to_rtr(rtr), Catch::Contains("INIT->RTR failed: dest_qpn 0x0"));
  CHECK(fake.modify_calls.empty());
}

TEST_CASE("a CQ larger than the device allows is refused with the limit", "[verbs]") {
  FakeVerbs fake;
  Stack s = open_stack(fake);
  CHECK_THROWS_WITH(CompletionQueue::create(s.context, 100000),
                    Catch::Contains("1..4096 (max_cqe)"));
}

TEST_CASE("destroying a QP flushes its requests and keeps other QPs' completions", "[verbs]") {
  FakeVerbs fake;
  Stack s = open_stack(fake);
  auto doomed = rts_qp(s);
  auto survivor = rts_qp(s);
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  for (uint64_t id = 1; id <= 3; ++id) {
    wr.wr_id = id;
    REQUIRE(doomed->post_send(&wr, &bad) == 0);
  }
  ibv_recv_wr rwr{};
  ibv_recv_wr* rbad = nullptr;
  rwr.wr_id = 9;
  REQUIRE(doomed->post_recv(&rwr, &rbad) == 0);
  fake.complete(s.cq->get(), survivor->qp_num(), 0xabc);  // already on the CQ when we drain

  doomed.reset();
  CHECK(fake.live_qps == 1);
  ibv_wc wc[4];
  REQUIRE(s.cq->poll(4, wc) == 1);  // only the survivor's completion is left, in order
  CHECK(wc[0].qp_num == survivor->qp_num());
  CHECK(wc[0].wr_id == 0xabc);
  CHECK(s.cq->poll(4, wc) == 0);
}

TEST_CASE("draining ends after a quiet period when the device refuses posts in ERR", "[verbs]") {
  FakeVerbs fake;
  Stack s = open_stack(fake);
  fake.refuse_posts_in_err = true;
  auto qp = rts_qp(s);
  ibv_send_wr wr{};
  wr.wr_id = 5;
  ibv_send_wr* bad = nullptr;
  REQUIRE(qp->post_send(&wr, &bad) == 0);
  qp.reset();
  CHECK(fake.live_qps == 0);
  CHECK(fake.pending_completions(s.cq->get()) == 0);  // the flushed request was consumed
}

TEST_CASE("a QP and CQ are found back from their verbs handles", "[verbs]") {
  FakeVerbs fake;
  Stack s = open_stack(fake);
  auto qp = QueuePair::create_rc(s.pd, s.cq, s.cq, QpCapabilities{});
  CHECK(QueuePair::from_ibv(qp->get()) == qp.get());
  CHECK(CompletionQueue::from_ibv(s.cq->get()) == s.cq.get());
  ibv_qp stranger{};
  CHECK(QueuePair::from_ibv(&stranger) == nullptr);
  CHECK(QueuePair::from_ibv(nullptr) == nullptr);
  CHECK_FALSE(qp->has_fatal_event());
  qp->mark_fatal(IBV_EVENT_QP_FATAL);
  CHECK(qp->fatal_event() == IBV_EVENT_QP_FATAL);
}

TEST_CASE("query_port falls back to the compat symbol, which fills only 48 bytes", "[verbs]") {
  FakeVerbs fake;
  fake.port.port_cap_flags2 = 0x55;  // beyond byte 48: the compat symbol must not copy it
  Stack s = open_stack(fake);
  const ibv::PortAttributes attrs = s.context->query_port(1);
  CHECK(attrs.attr.state == IBV_PORT_ACTIVE);
  CHECK(attrs.attr.active_speed == 128);
  CHECK(attrs.attr.link_layer == IBV_LINK_LAYER_ETHERNET);
  CHECK(attrs.attr.port_cap_flags2 == 0);
  CHECK(attrs.active_speed_ex == 0);
  CHECK(ibv::effective_speed_code(attrs) == 128);
  CHECK_THROWS_WITH(s.context->query_port(2), Catch::Contains("fake0 port 2"));
}

TEST_CASE("query_port prefers the extended op and reads active_speed_ex", "[verbs]") {
  FakeVerbs fake;
  fake.port.port_cap_flags2 = 0x55;
  fake.enable_extended_query_port(256);
  Stack s = open_stack(fake);
  const ibv::PortAttributes attrs = s.context->query_port(1);
  CHECK(fake.extended_queries == 1);
  CHECK(attrs.attr.port_cap_flags2 == 0x55);
  CHECK(attrs.active_speed_ex == 256);
  CHECK(ibv::effective_speed_code(attrs) == 256);
}
