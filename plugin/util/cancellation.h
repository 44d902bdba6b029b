// Holds off pthread cancellation while the plugin runs on a caller's thread. A thread cancelled
// at a cancellation point (write, poll, close, nanosleep ...) unwinds with glibc's forced-unwind
// exception, which must reach the top of the thread: a catch (...) that swallows it aborts the
// process ("FATAL: exception not rethrown"), and so does any noexcept function it meets on the
// way (std::terminate). The plugin's entry points, its destructors and its logging are full of
// both, and the log callback NCCL hands over writes to a file, so a cancellation that arrived
// inside them would abort the job (issue 49: 2 of 3 runs of one scenario). Inside this scope the
// request stays pending instead, and the thread is cancelled at its first cancellation point
// after the plugin returns: cancellation is delayed by at most the call, never lost.
// Asynchronous cancellation (PTHREAD_CANCEL_ASYNCHRONOUS) is undefined for C++ code and not
// covered.
#pragma once

#include <pthread.h>

namespace roce {

class CancellationHeldOff {
 public:
  CancellationHeldOff() noexcept {
    static_cast<void>(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &previous_));
  }
  ~CancellationHeldOff() { static_cast<void>(pthread_setcancelstate(previous_, nullptr)); }
  CancellationHeldOff(const CancellationHeldOff&) = delete;
  CancellationHeldOff& operator=(const CancellationHeldOff&) = delete;

 private:
  int previous_ = PTHREAD_CANCEL_ENABLE;
};

}  // namespace roce
