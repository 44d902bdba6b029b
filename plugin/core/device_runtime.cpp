// DeviceRuntime: see device_runtime.h.
#include "core/device_runtime.h"

#include <fmt/format.h>
#include <unistd.h>

#include "core/sysfs.h"
#include "core/verbs_registrar.h"
#include "util/config.h"

namespace roce {

DeviceRuntime::DeviceRuntime(int index, PluginDevice info, GdrSupport gdr, bool relaxed_ordering,
                             std::shared_ptr<AsyncEventMonitor> shared_monitor)
    : index_(index),
      info_(std::move(info)),
      gdr_(std::move(gdr)),
      relaxed_ordering_(relaxed_ordering),
      gid_text_(gid_to_string(info_.gid.entry.gid)),
      pd_(verbs::ProtectionDomain::create(info_.context)),
      mr_cache_(std::make_unique<MrCache>(std::make_unique<VerbsRegistrar>(pd_, relaxed_ordering),
                                          static_cast<size_t>(sysconf(_SC_PAGESIZE)))),
      monitor_(shared_monitor != nullptr ? std::move(shared_monitor)
                                         : std::make_shared<AsyncEventMonitor>(info_.context)),
      fabric_(std::make_shared<telemetry::FabricCounterWatch>(
          info_.name, info_.port,
          fmt::format("{}/ports/{}", sysfs::device_dir(config().sysfs_root, info_.ibv_name),
                      info_.port))) {}

DeviceRuntime::~DeviceRuntime() = default;

std::optional<int> DeviceRuntime::global_class_override() const noexcept {
  if (!info_.tc_override) {
    return std::nullopt;
  }
  return info_.tc_override->global_class;
}

std::string DeviceRuntime::override_file() const {
  return info_.tc_override ? info_.tc_override->file : std::string();
}

}  // namespace roce
