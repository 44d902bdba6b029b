// The wake-ups of vroce's event path, each with the interleaving that could lose one forced by
// the test rather than left to timing: the progress thread's eventfd (core/wake_fd.h).
#include <poll.h>

#include <catch2/catch.hpp>

#include "core/wake_fd.h"

namespace {

bool readable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) != 0;
}

}  // namespace

TEST_CASE(
    "a wake-up that lands while the progress thread drains its eventfd does not disable "
    "later ones",
    "[wakeup]") {
  vroce::transport::WakeFd wake;
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
