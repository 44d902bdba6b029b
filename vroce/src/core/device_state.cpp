#include "core/device_state.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <unordered_map>

#include "config/config.h"
#include "core/engine.h"
#include "device/device.h"
#include "sysfs/fake_sysfs.h"
#include "util/log.h"

namespace vroce::core {
namespace {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Where the QPN counter starts, so that QPNs differ between runs like on a real NIC. getrandom(2)
// rather than std::random_device: the shipped libibverbs.so.1 must not import arc4random
// (GLIBC_2.36), see compat/glibc_floor.cpp.
uint32_t random_qpn_seed() {
  uint32_t value = 0;
  ssize_t got = 0;
  do {
    got = getrandom(&value, sizeof value, GRND_NONBLOCK);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof value)) {
    return value;
  }
  // Only variety is at stake (no peer relies on QPNs being unpredictable), so say so and go on.
  VROCE_LOG(Warn, "getrandom failed (%s): QPNs start from a clock-derived value",
            got < 0 ? std::strerror(errno) : "short read");
  return static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace

DeviceState& DeviceState::of(device::Device& device) {
  // Devices live for the process, so their states do too (never destroyed: the progress
  // threads they may own are stopped by the last QP's destruction, not by static teardown).
  static auto* states = new std::map<device::Device*, std::unique_ptr<DeviceState>>();
  std::lock_guard lock(registry_mutex());
  auto& slot = (*states)[&device];
  if (!slot) {
    slot = std::make_unique<DeviceState>(device);
  }
  return *slot;
}

DeviceState::DeviceState(device::Device& device) : device_(device) {
  next_qpn_ = 0x100 + (random_qpn_seed() % 0xF00000);
  if (const auto& root = config().sysfs_root) {
    counter_files_ =
        std::make_unique<sysfs::PortCounterFiles>(sysfs::fake_sysfs_port_dir(*root, device.name()));
  }
}

void DeviceState::publish_port_counters(bool force) noexcept {
  if (counter_files_) {
    try {
      counter_files_->publish(port_counters_, force);
    } catch (...) {
      // Out of memory building a path: the counters stay as last published.
    }
  }
}

std::optional<sysfs::PortCounterFiles::Clock::time_point> DeviceState::port_counters_due()
    const noexcept {
  return counter_files_ ? counter_files_->due(port_counters_) : std::nullopt;
}

void DeviceState::port_counters_engine_started() noexcept {
  if (counter_files_) {
    try {
      counter_files_->continue_from_files(port_counters_);
    } catch (...) {
    }
  }
}

uint32_t DeviceState::allocate_qpn() {
  std::lock_guard lock(mutex_);
  uint32_t qpn = next_qpn_;
  next_qpn_ = (next_qpn_ + 1) & 0xFFFFFF;
  if (next_qpn_ < 2) {
    next_qpn_ = 2;
  }
  return qpn;
}

std::shared_ptr<Engine> DeviceState::engine(int* error) {
  std::unique_lock lock(mutex_);
  if (auto running = engine_.lock()) {
    return running;
  }
  // A previous engine whose last QP just went may still hold the port: let it finish.
  stopped_.wait(lock, [this] { return engines_alive_ == 0; });
  std::unique_ptr<Engine> fresh = Engine::start(*this, error);
  if (!fresh) {
    return nullptr;
  }
  Engine* raw = fresh.release();
  ++engines_alive_;
  live_.store(raw, std::memory_order_seq_cst);
  std::shared_ptr<Engine> shared(raw, [this](Engine* e) { engine_stopped(e); });
  engine_ = shared;
  return shared;
}

void DeviceState::engine_stopped(Engine* engine) {
  live_.store(nullptr, std::memory_order_seq_cst);
  while (pollers_.load(std::memory_order_seq_cst) != 0) {
    std::this_thread::yield();
  }
  delete engine;  // joins the progress thread and closes the socket
  std::lock_guard lock(mutex_);
  --engines_alive_;
  stopped_.notify_all();
}

void DeviceState::progress() noexcept {
  pollers_.fetch_add(1, std::memory_order_seq_cst);
  if (Engine* engine = live_.load(std::memory_order_seq_cst)) {
    engine->try_progress();
  }
  pollers_.fetch_sub(1, std::memory_order_release);
}

}  // namespace vroce::core
