// What the RC part keeps per emulated device for the life of the process: the key table shared
// by all contexts of the device, QP numbering, and the transport engine (socket + progress
// thread), which starts with the device's first QP and stops after its last.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/key_table.h"
#include "packet_io/port_counters.h"
#include "sysfs/port_counter_files.h"

namespace vroce::device {
class Device;
struct Context;
}  // namespace vroce::device

namespace vroce::core {

class Engine;

class DeviceState {
 public:
  // The state of `device`, created on first use.
  static DeviceState& of(device::Device& device);

  explicit DeviceState(device::Device& device);
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  device::Device& device() const noexcept { return device_; }
  KeyTable& keys() noexcept { return keys_; }

  // A fresh 24-bit QP number, never 0 or 1 (the special QPs), unique in this process; the start
  // is random so that a restarted process does not reuse its predecessor's numbers.
  uint32_t allocate_qpn();

  // The running engine, starting it if none runs. On failure returns nullptr with *error set
  // (EADDRINUSE when another process owns the address's UDP port 4791).
  std::shared_ptr<Engine> engine(int* error);

  // Lets the running engine, if any, process what arrived (called by pollers of an empty CQ).
  void progress() noexcept;

  // The device's port counters (mlx5's hw_counters and counters), counted by its engine.
  packet_io::PortCounters& port_counters() noexcept { return port_counters_; }
  // With VROCE_SYSFS_ROOT: writes them into the fake sysfs tree when they changed (always with
  // `force`); without it, nothing. See sysfs/port_counter_files.h for when it is called.
  void publish_port_counters(bool force = false) noexcept;
  bool publishes_port_counters() const noexcept { return counter_files_ != nullptr; }
  // When the progress thread should publish next: nullopt when nothing is pending.
  std::optional<sysfs::PortCounterFiles::Clock::time_point> port_counters_due() const noexcept;
  // The engine has bound the device's address: continue from the published values.
  void port_counters_engine_started() noexcept;

 private:
  // Engines are shared by the QPs of the device; the last QP's destruction stops the engine.
  // `live_` lets CQ pollers reach the engine without owning it: the engine clears it and waits
  // for pollers in flight before it goes away.
  void engine_stopped(Engine* engine);

  device::Device& device_;
  KeyTable keys_;
  std::mutex mutex_;
  std::condition_variable stopped_;
  std::weak_ptr<Engine> engine_;  // guarded by mutex_
  int engines_alive_ = 0;         // guarded by mutex_: 0 or 1
  std::atomic<Engine*> live_{nullptr};
  std::atomic<uint32_t> pollers_{0};
  uint32_t next_qpn_;
  packet_io::PortCounters port_counters_;
  std::unique_ptr<sysfs::PortCounterFiles> counter_files_;  // null without VROCE_SYSFS_ROOT
};

}  // namespace vroce::core
