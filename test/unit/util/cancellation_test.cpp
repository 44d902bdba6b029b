// Issue 49: a thread cancelled (pthread_cancel) while it runs plugin code must be cancelled
// cleanly, not abort the process. Before the fix, a cancellation point inside NCCL's log callback
// started glibc's forced unwind, which the log's catch (...) swallowed: "FATAL: exception not
// rethrown" and SIGABRT (a failed test here is the test process dying). Now the plugin holds the
// cancellation off while it runs and the thread is cancelled at its next cancellation point.
#include "util/cancellation.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdarg>
#include <thread>

#include "abi/guard.h"
#include "util/log.h"

namespace {

std::atomic<bool> g_inside{false};    // the thread is in the callback or guarded body
std::atomic<bool> g_finished{false};  // ... and left it normally
std::atomic<int> g_result{-1};        // what guarded() returned

// Sleeps in small steps: each nanosleep is a cancellation point, as NCCL's fprintf/fflush into
// its debug file are.
void sleep_through_cancellation_points() {
  g_inside.store(true);
  for (int i = 0; i < 20; ++i) {
    usleep(10'000);
  }
  g_finished.store(true);
}

__attribute__((format(printf, 5, 6))) void slow_nccl_logger(ncclDebugLogLevel /*level*/,
                                                            unsigned long /*flags*/,
                                                            const char* /*file*/, int /*line*/,
                                                            const char* /*fmt*/, ...) {
  sleep_through_cancellation_points();
}

void wait_to_be_cancelled() {
  for (;;) {
    pthread_testcancel();
    usleep(1000);
  }
}

void* log_then_wait(void* /*unused*/) {
  ROCE_WARN(NCCL_NET, "a record whose callback is interrupted by pthread_cancel");
  wait_to_be_cancelled();
  return nullptr;
}

void* guarded_then_wait(void* /*unused*/) {
  g_result.store(roce::abi::guarded("cancellation test", [] {
    sleep_through_cancellation_points();
    return ncclSuccess;
  }));
  wait_to_be_cancelled();
  return nullptr;
}

// Starts `body` on a thread, cancels it once it is inside, and returns what join gave.
void* cancel_while_inside(void* (*body)(void*)) {
  g_inside.store(false);
  g_finished.store(false);
  g_result.store(-1);
  pthread_t thread{};
  REQUIRE(pthread_create(&thread, nullptr, body, nullptr) == 0);
  while (!g_inside.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(pthread_cancel(thread) == 0);
  void* result = nullptr;
  REQUIRE(pthread_join(thread, &result) == 0);
  return result;
}

int cancel_state() {
  int state = -1;
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &state);
  pthread_setcancelstate(state, nullptr);
  return state;
}

}  // namespace

TEST_CASE("a thread cancelled inside NCCL's log callback is cancelled cleanly after it", "[log]") {
  setenv("NCCL_DEBUG", "WARN", 1);
  roce::log::set_nccl_logger(&slow_nccl_logger);
  void* result = cancel_while_inside(&log_then_wait);
  roce::log::set_nccl_logger(nullptr);
  unsetenv("NCCL_DEBUG");
  roce::log::reload_filter_from_env();
  CHECK(result == PTHREAD_CANCELED);
  CHECK(g_finished.load());  // the record was handed over whole, then the thread went
}

TEST_CASE("a thread cancelled inside a guarded entry point is cancelled cleanly after it") {
  void* result = cancel_while_inside(&guarded_then_wait);
  CHECK(result == PTHREAD_CANCELED);
  CHECK(g_finished.load());
  CHECK(g_result.load() == ncclSuccess);  // the entry point returned its own result
}

TEST_CASE("holding cancellation off restores the caller's state, nested or not") {
  REQUIRE(cancel_state() == PTHREAD_CANCEL_ENABLE);
  {
    const roce::CancellationHeldOff outer;
    CHECK(cancel_state() == PTHREAD_CANCEL_DISABLE);
    {
      const roce::CancellationHeldOff inner;
      CHECK(cancel_state() == PTHREAD_CANCEL_DISABLE);
    }
    CHECK(cancel_state() == PTHREAD_CANCEL_DISABLE);  // the inner scope leaves the outer's
  }
  CHECK(cancel_state() == PTHREAD_CANCEL_ENABLE);
}
