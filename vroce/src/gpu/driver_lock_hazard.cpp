// The driver-lock deadlock's warning and watchdog; see gpu/driver_lock_hazard.h.
#include "gpu/driver_lock_hazard.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "util/log.h"

namespace vroce::gpu {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kRemedies =
    "set CUDA_MODULE_LOADING=EAGER before CUDA starts, and keep the host from running far "
    "ahead of the GPU (synchronise every few dozen collectives); or stage through host memory "
    "(NCCL_NET_GDR_LEVEL=LOC). A real NIC writes GPU memory without the driver and is not "
    "affected";

struct Call {
  Clock::time_point started;
  const char* what = nullptr;
  bool reported = false;
};

struct Watchdog {
  std::mutex mutex;
  std::map<uint64_t, Call> calls;  // by ticket
  uint64_t next_ticket = 1;
  bool started = false;
  bool failed = false;  // the thread could not be created: nothing is watched
  Clock::duration limit{};
};

// Never destroyed: the watchdog thread, detached, may outlive static destructors.
Watchdog& watchdog() {
  static auto* instance = new Watchdog;
  return *instance;
}

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

[[noreturn]] void watch_forever(Watchdog* w) {
  const auto period = std::clamp<Clock::duration>(w->limit / 4, std::chrono::milliseconds(20),
                                                  std::chrono::seconds(1));
  for (;;) {
    std::this_thread::sleep_for(period);
    std::vector<std::pair<const char*, Clock::duration>> overdue;
    {
      std::lock_guard<std::mutex> lock(w->mutex);
      const auto now = Clock::now();
      for (auto& [ticket, call] : w->calls) {
        if (!call.reported && now - call.started >= w->limit) {
          call.reported = true;
          overdue.emplace_back(call.what, now - call.started);
        }
      }
    }  // logging writes to stderr, outside the lock: no copy waits for that
    for (const auto& [what, blocked] : overdue) {
      VROCE_LOG(Error,
                "a CUDA %s has been blocked inside the CUDA driver for %.1f s. vroce emulates "
                "GPUDirect with driver copies from inside this process, so an application thread "
                "holding the driver's lock while it waits for the GPU (lazy kernel loading, or "
                "submitting into a full launch queue) deadlocks against an NCCL kernel waiting "
                "for this data; the peer will see its transport retries exhausted. To avoid it: "
                "%s",
                what, seconds(blocked), kRemedies);
    }
  }
}

// Starts the watchdog thread on first use; false when it cannot run.
bool ensure_started(Watchdog& w) {
  if (w.started || w.failed) {
    return w.started;
  }
  w.limit = std::chrono::milliseconds(config().gpu_stall_warn_ms);
  try {
    std::thread(watch_forever, &w).detach();
    w.started = true;
  } catch (...) {  // std::system_error: no thread for the watchdog
    w.failed = true;
    VROCE_LOG(Warn, "could not start the CUDA stall watchdog: blocked copies will not be reported");
  }
  return w.started;
}

}  // namespace

void warn_if_lazy_module_loading() noexcept {
  static std::atomic<bool> checked{false};
  if (checked.load(std::memory_order_relaxed) || checked.exchange(true)) {
    return;
  }
  const char* mode = std::getenv("CUDA_MODULE_LOADING");
  if (mode != nullptr && std::strcmp(mode, "EAGER") == 0) {
    return;
  }
  VROCE_LOG(Warn,
            "copying to or from device memory while CUDA_MODULE_LOADING is %s: lazy kernel loading "
            "synchronises the GPU while holding the CUDA driver's lock, which vroce's emulated "
            "GPUDirect copies also need, so loading a kernel while an NCCL kernel waits for vroce "
            "deadlocks; to avoid it: %s",
            mode != nullptr ? mode : "unset (LAZY)", kRemedies);
}

DriverCallWatch::DriverCallWatch(const char* what) noexcept {
  Watchdog& w = watchdog();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (!ensure_started(w)) {
    return;
  }
  try {
    w.calls.emplace(w.next_ticket, Call{Clock::now(), what, false});
    ticket_ = w.next_ticket++;
  } catch (...) {  // out of memory for the entry: this call goes unwatched
  }
}

DriverCallWatch::~DriverCallWatch() {
  if (ticket_ == 0) {
    return;
  }
  Watchdog& w = watchdog();
  Call call;
  {
    std::lock_guard<std::mutex> lock(w.mutex);
    auto it = w.calls.find(ticket_);
    if (it == w.calls.end()) {
      return;
    }
    call = it->second;
    w.calls.erase(it);
  }
  if (call.reported) {
    VROCE_LOG(Warn, "the CUDA %s reported blocked has completed after %.1f s", call.what,
              seconds(Clock::now() - call.started));
  }
}

}  // namespace vroce::gpu
