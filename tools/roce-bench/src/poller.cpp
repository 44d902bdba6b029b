// Poll pacing, hang detection and peer liveness.
#include "poller.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "errors.h"
#include "rendezvous.h"

namespace roce::bench {
namespace {

constexpr std::uint64_t kSpinsBeforeYield = 64;
constexpr std::uint64_t kYieldsBeforeSleep = 256;
constexpr long kSleepNs = 20'000;
constexpr std::uint64_t kClockEvery = 64;
constexpr auto kCheckInterval = std::chrono::milliseconds(100);

}  // namespace

bool Poller::pace() {
  const std::uint64_t n = idle_++;
  if (sleep_us_ > 0) {
    usleep(static_cast<useconds_t>(sleep_us_));
  } else if (policy_ == PollPolicy::Sleep && n >= kSpinsBeforeYield + kYieldsBeforeSleep) {
    const timespec pause{0, kSleepNs};
    nanosleep(&pause, nullptr);
  } else if (policy_ != PollPolicy::Spin && n >= kSpinsBeforeYield) {
    sched_yield();
  }
  if (n == 0) {
    idle_since_ = std::chrono::steady_clock::now();
    return false;
  }
  return n % kClockEvery == 0 || sleep_us_ > 0;
}

void Poller::check(const char* what) {
  const auto now = std::chrono::steady_clock::now();
  if (now - idle_since_ > timeout_) {
    throw BenchError(std::string(what) + ": no progress for " +
                     std::to_string(static_cast<int>(timeout_.count())) +
                     " s (the peer or the plugin is stuck; --timeout sets the limit)");
  }
  if (rendezvous_ != nullptr && now >= next_check_) {
    next_check_ = now + kCheckInterval;
    rendezvous_->check_alive();
  }
}

}  // namespace roce::bench
