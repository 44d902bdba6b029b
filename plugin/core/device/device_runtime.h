// One plugin device at run time: what discovery found (PluginDevice) plus what the plugin keeps
// open for it while it is in use: the protection domain every comm and registration on it
// shares (so registrations are global to the device, regIsGlobal = 1), the registration cache,
// the async-event monitor of its verbs context, its GPUDirect support, and the strings handed
// to NCCL in getProperties, and the port's fabric counters as read at init. Comms hold a
// shared_ptr, so a device outlives a finalize that comes before the last close.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/device/async_events.h"
#include "core/device/device_discovery.h"
#include "core/memory/gdr.h"
#include "core/memory/mr_cache.h"
#include "telemetry/fabric_counters.h"
#include "verbs/protection_domain.h"

namespace roce {

class DeviceRuntime {
 public:
  // Opens the PD, the cache and (unless another port of the same verbs device already has one,
  // passed as `shared_monitor`) the async-event monitor. Throws on failure.
  DeviceRuntime(int index, PluginDevice info, GdrSupport gdr, bool relaxed_ordering,
                std::shared_ptr<AsyncEventMonitor> shared_monitor);
  ~DeviceRuntime();
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  int index() const noexcept { return index_; }
  const PluginDevice& info() const noexcept { return info_; }
  const std::string& name() const noexcept { return info_.name; }
  uint8_t port() const noexcept { return static_cast<uint8_t>(info_.port); }
  const std::shared_ptr<verbs::Context>& context() const noexcept { return info_.context; }
  const std::shared_ptr<verbs::ProtectionDomain>& pd() const noexcept { return pd_; }
  MrCache& mr_cache() noexcept { return *mr_cache_; }
  const GdrSupport& gdr() const noexcept { return gdr_; }
  const std::shared_ptr<AsyncEventMonitor>& monitor() const noexcept { return monitor_; }
  bool relaxed_ordering() const noexcept { return relaxed_ordering_; }

  // "::ffff:10.0.0.1" text of the selected GID and its index.
  const std::string& gid_text() const noexcept { return gid_text_; }
  int gid_index() const noexcept { return info_.gid.index; }

  // The host-wide class override of this port (mlx5 tc file): the class every QP leaves with
  // when it is a global one; nullopt when there is none. Address rules are reported separately.
  std::optional<int> global_class_override() const noexcept;
  std::string override_file() const;

  // Set by the async-event thread: the device reported IBV_EVENT_DEVICE_FATAL. (A port going
  // down is not fatal: see async_events.h.)
  bool fatal() const noexcept { return monitor_ != nullptr && monitor_->device_fatal(); }

  // The port's fabric counters (hw_counters, counters) against their values at init.
  const std::shared_ptr<const telemetry::FabricCounterWatch>& fabric() const noexcept {
    return fabric_;
  }

 private:
  int index_;
  PluginDevice info_;
  GdrSupport gdr_;
  bool relaxed_ordering_;
  std::string gid_text_;
  std::shared_ptr<verbs::ProtectionDomain> pd_;
  std::unique_ptr<MrCache> mr_cache_;
  std::shared_ptr<AsyncEventMonitor> monitor_;
  std::shared_ptr<const telemetry::FabricCounterWatch> fabric_;
};

}  // namespace roce
