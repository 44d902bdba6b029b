// The two wake-ups of vroce's event path, each with the interleaving that could lose one forced
// by the test rather than left to timing: the progress thread's eventfd (packet_io/wake_fd.h), and
// a completion channel whose poster signals the fd only after it released the channel's mutex
// (core/cq.h).
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <memory>
#include <mutex>
#include <thread>

#include "core/cq.h"
#include "packet_io/wake_fd.h"

namespace {

bool readable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) != 0;
}

// A channel and CQs as create_comp_channel and create_cq set up the parts get() and post() use.
struct Channel {
  vroce::core::CompChannel channel;
  vroce::core::Cq cqs[2];
  Channel() {
    channel.ibv.fd = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    REQUIRE(channel.ibv.fd >= 0);
    for (auto& cq : cqs) {
      pthread_mutex_init(&cq.ibv.mutex, nullptr);
    }
  }
  ~Channel() {
    ::close(channel.ibv.fd);
    for (auto& cq : cqs) {
      pthread_mutex_destroy(&cq.ibv.mutex);
    }
  }
  size_t queued() {
    std::lock_guard lock(channel.mutex);
    return channel.events.size();
  }
};

}  // namespace

TEST_CASE(
    "a wake-up that lands while the progress thread drains its eventfd does not disable "
    "later ones",
    "[wakeup]") {
  vroce::packet_io::WakeFd wake;
  REQUIRE(wake.open() == 0);
  wake.wake();
  REQUIRE(readable(wake.fd()));
  // A kick between the two steps of the drain: the woken thread is about to look at its work,
  // so this one may write nothing, but it must not leave the flag set with the fd drained.
  wake.consume([&] { wake.wake(); });
  wake.wake();
  REQUIRE(readable(wake.fd()));
  wake.consume();
  REQUIRE_FALSE(readable(wake.fd()));
  wake.wake();
  wake.wake();  // one write while one is pending
  wake.consume();
  REQUIRE_FALSE(readable(wake.fd()));
}

TEST_CASE("completion channel: the fd is readable exactly while events wait, across two CQs",
          "[wakeup]") {
  Channel c;
  REQUIRE_FALSE(readable(c.channel.ibv.fd));
  c.channel.post(&c.cqs[0]);
  c.channel.post(&c.cqs[1]);
  c.channel.post(&c.cqs[0]);
  vroce::core::Cq* order[] = {&c.cqs[0], &c.cqs[1], &c.cqs[0]};
  for (vroce::core::Cq* expected : order) {
    REQUIRE(readable(c.channel.ibv.fd));
    vroce::core::Cq* got = nullptr;
    REQUIRE(c.channel.get(&got) == 0);
    REQUIRE(got == expected);
  }
  REQUIRE_FALSE(readable(c.channel.ibv.fd));
  REQUIRE(c.cqs[0].events_delivered == 2);
  REQUIRE(c.cqs[1].events_delivered == 1);
  // O_NONBLOCK: an empty channel says EAGAIN.
  int flags = ::fcntl(c.channel.ibv.fd, F_GETFL);
  REQUIRE(::fcntl(c.channel.ibv.fd, F_SETFL, flags | O_NONBLOCK) == 0);
  vroce::core::Cq* got = nullptr;
  errno = 0;
  REQUIRE(c.channel.get(&got) == -1);
  REQUIRE(errno == EAGAIN);
}

TEST_CASE(
    "completion channel: an event taken before its poster signalled leaves the fd "
    "consistent",
    "[wakeup]") {
  Channel c;
  bool nonblocking = GENERATE(false, true);
  if (nonblocking) {
    int flags = ::fcntl(c.channel.ibv.fd, F_GETFL);
    REQUIRE(::fcntl(c.channel.ibv.fd, F_SETFL, flags | O_NONBLOCK) == 0);
  }
  // The poster has queued the event and not yet written the fd when the waiter takes it.
  c.channel.queue(&c.cqs[0]);
  vroce::core::Cq* got = nullptr;
  int rc = -2;
  std::thread waiter([&] { rc = c.channel.get(&got); });
  while (c.queued() != 0) {  // the waiter took the event: now the poster signals
    std::this_thread::yield();
  }
  c.channel.signal();
  waiter.join();
  REQUIRE(rc == 0);
  REQUIRE(got == &c.cqs[0]);
  // The unit was consumed by the waiter: no readable fd without an event behind it.
  REQUIRE_FALSE(readable(c.channel.ibv.fd));
  c.channel.post(&c.cqs[1]);
  REQUIRE(readable(c.channel.ibv.fd));
  REQUIRE(c.channel.get(&got) == 0);
  REQUIRE(got == &c.cqs[1]);
  REQUIRE_FALSE(readable(c.channel.ibv.fd));
}

TEST_CASE("completion channel: a destroyed CQ's queued events leave no unit behind", "[wakeup]") {
  Channel c;
  c.channel.post(&c.cqs[0]);
  c.channel.post(&c.cqs[1]);
  c.channel.post(&c.cqs[0]);
  REQUIRE(c.channel.discard(&c.cqs[0]) == 2);
  vroce::core::Cq* got = nullptr;
  REQUIRE(c.channel.get(&got) == 0);
  REQUIRE(got == &c.cqs[1]);
  REQUIRE_FALSE(readable(c.channel.ibv.fd));
}

TEST_CASE("completion channel: a blocked waiter gets every event a racing poster queues",
          "[wakeup]") {
  Channel c;
  constexpr int kEvents = 20000;
  std::thread poster([&] {
    for (int i = 0; i < kEvents; ++i) {
      c.channel.post(&c.cqs[i % 2]);
    }
  });
  int got_count = 0;
  for (; got_count < kEvents; ++got_count) {
    vroce::core::Cq* got = nullptr;
    REQUIRE(c.channel.get(&got) == 0);
  }
  poster.join();
  REQUIRE(got_count == kEvents);
  REQUIRE(c.cqs[0].events_delivered + c.cqs[1].events_delivered == kEvents);
  REQUIRE_FALSE(readable(c.channel.ibv.fd));
}
