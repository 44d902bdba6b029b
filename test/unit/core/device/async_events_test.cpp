// The async-event thread over an in-memory provider whose async fd is an eventfd.
#include "core/device/async_events.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "fake_verbs.h"
#include "verbs/completion_queue.h"
#include "verbs/device_list.h"
#include "verbs/protection_domain.h"
#include "verbs/queue_pair.h"

using namespace roce;
using namespace std::chrono_literals;
using roce::test::FakeVerbs;

namespace {

std::shared_ptr<verbs::Context> open_context(FakeVerbs& fake) {
  auto lib = fake.library();
  verbs::DeviceList list(lib);
  return verbs::Context::open(lib, list.devices()[0]);
}

ibv_async_event port_event(ibv_event_type type, int port) {
  ibv_async_event event{};
  event.event_type = type;
  event.element.port_num = port;
  return event;
}

}  // namespace

TEST_CASE("fatal and informational events are told apart", "[async_events]") {
  for (ibv_event_type fatal : {IBV_EVENT_DEVICE_FATAL, IBV_EVENT_CQ_ERR, IBV_EVENT_QP_FATAL,
                               IBV_EVENT_QP_REQ_ERR, IBV_EVENT_QP_ACCESS_ERR}) {
    CHECK(is_fatal_async_event(fatal));
  }
  // A link flap is not fatal (NCCL's IB transport agrees): RC retransmission rides it out.
  for (ibv_event_type benign :
       {IBV_EVENT_PORT_ERR, IBV_EVENT_PORT_ACTIVE, IBV_EVENT_GID_CHANGE, IBV_EVENT_COMM_EST,
        IBV_EVENT_LID_CHANGE, IBV_EVENT_QP_LAST_WQE_REACHED}) {
    CHECK_FALSE(is_fatal_async_event(benign));
  }
  CHECK(async_event_name(IBV_EVENT_PORT_ERR) == "IBV_EVENT_PORT_ERR");
  CHECK(async_event_name(static_cast<ibv_event_type>(30)) == "IBV_EVENT_30");
}

TEST_CASE("a port error marks nothing; every event is acked", "[async_events]") {
  FakeVerbs fake;
  AsyncEventMonitor monitor(open_context(fake));
  fake.raise(port_event(IBV_EVENT_PORT_ERR, 1));
  fake.raise(port_event(IBV_EVENT_PORT_ACTIVE, 1));
  REQUIRE(monitor.wait_for_events(2, 5s));
  CHECK_FALSE(monitor.device_fatal());
  monitor.stop();
  CHECK(fake.acked_events == 2);
}

TEST_CASE("QP and CQ errors mark the objects they name", "[async_events]") {
  FakeVerbs fake;
  auto context = open_context(fake);
  auto pd = verbs::ProtectionDomain::create(context);
  auto cq = verbs::CompletionQueue::create(context, 16);
  auto qp = verbs::QueuePair::create_rc(pd, cq, cq, verbs::QpCapabilities{});
  auto other = verbs::QueuePair::create_rc(pd, cq, cq, verbs::QpCapabilities{});
  AsyncEventMonitor monitor(context);

  ibv_async_event qp_event{};
  qp_event.event_type = IBV_EVENT_QP_REQ_ERR;
  qp_event.element.qp = qp->get();
  ibv_async_event cq_event{};
  cq_event.event_type = IBV_EVENT_CQ_ERR;
  cq_event.element.cq = cq->get();
  ibv_async_event benign{};
  benign.event_type = IBV_EVENT_COMM_EST;
  benign.element.qp = other->get();
  fake.raise(qp_event);
  fake.raise(cq_event);
  fake.raise(benign);
  REQUIRE(monitor.wait_for_events(3, 5s));
  CHECK(qp->fatal_event() == IBV_EVENT_QP_REQ_ERR);
  CHECK(cq->fatal_event() == IBV_EVENT_CQ_ERR);
  CHECK_FALSE(other->has_fatal_event());
}

TEST_CASE("DEVICE_FATAL marks the device", "[async_events]") {
  FakeVerbs fake;
  AsyncEventMonitor monitor(open_context(fake));
  ibv_async_event event{};
  event.event_type = IBV_EVENT_DEVICE_FATAL;
  fake.raise(event);
  REQUIRE(monitor.wait_for_events(1, 5s));
  CHECK(monitor.device_fatal());
}

TEST_CASE("the thread stops promptly with no event pending", "[async_events]") {
  FakeVerbs fake;
  AsyncEventMonitor monitor(open_context(fake));
  const auto start = std::chrono::steady_clock::now();
  monitor.stop();
  monitor.stop();  // idempotent
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}
