// AsyncEventQueue: one event per waiter, blocking and non-blocking reads, poll readiness, and
// the ack/retire protocol that object destruction relies on.
#include "device/async_event_queue.h"

#include <fcntl.h>
#include <poll.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <set>
#include <thread>

#include "hang_bound.h"

using vroce::device::AsyncEventQueue;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<AsyncEventQueue> make_queue() {
  auto queue = AsyncEventQueue::create();
  REQUIRE(queue);
  return std::move(*queue);
}

ibv_async_event port_event(ibv_event_type type) {
  ibv_async_event event{};
  event.event_type = type;
  event.element.port_num = 1;
  return event;
}

ibv_async_event qp_event(ibv_qp* qp) {
  ibv_async_event event{};
  event.event_type = IBV_EVENT_QP_FATAL;
  event.element.qp = qp;
  return event;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

}  // namespace

TEST_CASE("events come out in order and the fd is readable exactly while some are queued",
          "[async]") {
  auto queue = make_queue();
  CHECK_FALSE(readable(queue->fd()));
  queue->push(port_event(IBV_EVENT_PORT_ERR));
  queue->push(port_event(IBV_EVENT_PORT_ACTIVE));
  CHECK(readable(queue->fd()));
  CHECK(queue->pending() == 2);
  ibv_async_event event{};
  REQUIRE(queue->get(&event) == 0);
  CHECK(event.event_type == IBV_EVENT_PORT_ERR);
  CHECK(event.element.port_num == 1);
  CHECK(readable(queue->fd()));
  REQUIRE(queue->get(&event) == 0);
  CHECK(event.event_type == IBV_EVENT_PORT_ACTIVE);
  CHECK_FALSE(readable(queue->fd()));
  CHECK(queue->pending() == 0);
}

TEST_CASE("get blocks until an event is pushed", "[async]") {
  auto queue = make_queue();
  std::atomic<bool> returned{false};
  auto waiter = std::async(std::launch::async, [&] {
    ibv_async_event event{};
    int rc = queue->get(&event);
    returned = true;
    return rc == 0 ? event.event_type : IBV_EVENT_WQ_FATAL;
  });
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(returned.load());  // still blocked: nothing queued
  queue->push(port_event(IBV_EVENT_GID_CHANGE));
  REQUIRE(waiter.wait_for(roce::test::kHangBound) == std::future_status::ready);
  CHECK(waiter.get() == IBV_EVENT_GID_CHANGE);
}

TEST_CASE("with O_NONBLOCK on the fd, get returns EAGAIN when nothing is queued", "[async]") {
  auto queue = make_queue();
  int flags = fcntl(queue->fd(), F_GETFL);
  REQUIRE(fcntl(queue->fd(), F_SETFL, flags | O_NONBLOCK) == 0);
  ibv_async_event event{};
  CHECK(queue->get(&event) == EAGAIN);
  queue->push(port_event(IBV_EVENT_SM_CHANGE));
  CHECK(queue->get(&event) == 0);
  CHECK(event.event_type == IBV_EVENT_SM_CHANGE);
  CHECK(queue->get(&event) == EAGAIN);
}

TEST_CASE("each event goes to exactly one of several waiting threads", "[async]") {
  auto queue = make_queue();
  constexpr int kWaiters = 4;
  std::vector<std::future<ibv_event_type>> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::async(std::launch::async, [&] {
      ibv_async_event event{};
      return queue->get(&event) == 0 ? event.event_type : IBV_EVENT_WQ_FATAL;
    }));
  }
  std::this_thread::sleep_for(20ms);
  const ibv_event_type types[kWaiters] = {IBV_EVENT_PORT_ERR, IBV_EVENT_PORT_ACTIVE,
                                          IBV_EVENT_LID_CHANGE, IBV_EVENT_PKEY_CHANGE};
  for (ibv_event_type type : types) {
    queue->push(port_event(type));
  }
  std::multiset<int> received;
  for (auto& waiter : waiters) {
    REQUIRE(waiter.wait_for(roce::test::kHangBound) == std::future_status::ready);
    received.insert(waiter.get());
  }
  CHECK(received == std::multiset<int>(std::begin(types), std::end(types)));
  CHECK(queue->pending() == 0);
}

TEST_CASE("object_of names the QP, CQ, SRQ or WQ of an event", "[async]") {
  ibv_qp qp{};
  ibv_cq cq{};
  CHECK(AsyncEventQueue::object_of(qp_event(&qp)) == &qp);
  ibv_async_event cq_err{};
  cq_err.event_type = IBV_EVENT_CQ_ERR;
  cq_err.element.cq = &cq;
  CHECK(AsyncEventQueue::object_of(cq_err) == &cq);
  CHECK(AsyncEventQueue::object_of(port_event(IBV_EVENT_PORT_ERR)) == nullptr);
  CHECK(AsyncEventQueue::object_of(port_event(IBV_EVENT_DEVICE_FATAL)) == nullptr);
}

TEST_CASE("retire drops undelivered events and waits for delivered ones to be acked", "[async]") {
  auto queue = make_queue();
  ibv_qp doomed{};
  ibv_qp other{};
  queue->push(qp_event(&doomed));
  queue->push(qp_event(&other));
  queue->push(qp_event(&doomed));

  ibv_async_event delivered{};
  REQUIRE(queue->get(&delivered) == 0);  // the first event of `doomed` is now the caller's
  CHECK(delivered.element.qp == &doomed);

  std::atomic<bool> retired{false};
  auto destroyer = std::async(std::launch::async, [&] {
    queue->retire(&doomed);
    retired = true;
  });
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(retired.load());  // waits: one delivered event of `doomed` is not acked
  queue->ack(delivered);
  REQUIRE(destroyer.wait_for(roce::test::kHangBound) == std::future_status::ready);
  CHECK(retired.load());

  // The undelivered event of `doomed` is gone; the other QP's event stays.
  CHECK(queue->pending() == 1);
  ibv_async_event remaining{};
  REQUIRE(queue->get(&remaining) == 0);
  CHECK(remaining.element.qp == &other);
}

TEST_CASE("retire of an object with no events returns at once", "[async]") {
  auto queue = make_queue();
  ibv_cq cq{};
  queue->retire(&cq);
  CHECK(queue->pending() == 0);
}

TEST_CASE("a get that consumed a signal for a retired event waits for the next one", "[async]") {
  auto queue = make_queue();
  ibv_qp qp{};
  queue->push(qp_event(&qp));
  queue->retire(&qp);  // drops the only queued event while the fd is armed
  int flags = fcntl(queue->fd(), F_GETFL);
  REQUIRE(fcntl(queue->fd(), F_SETFL, flags | O_NONBLOCK) == 0);
  ibv_async_event event{};
  CHECK(queue->get(&event) == EAGAIN);  // not the retired event
}
