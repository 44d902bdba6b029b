// DeviceRuntime: see device_runtime.h.
#include "core/device/device_runtime.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "core/device/sysfs.h"
#include "core/memory/verbs_registrar.h"
#include "util/config.h"

namespace roce {

namespace {

// How often the comms look at their stalls when no event makes them look: an eighth of
// NCCL_ROCE_STALL_WARN_MS, between 10 ms and 1 s, so a stall is reported within an eighth of its
// threshold past it (625 ms for the default 5 s); never, with stall reports off. Each look scans
// the comm's request slots, a few thousand instructions, so it is paced by time, not by polls.
std::chrono::milliseconds health_check_interval() {
  const int warn_ms = config().stall_warn_ms;
  if (warn_ms <= 0) {
    return std::chrono::milliseconds{0};
  }
  return std::chrono::milliseconds{std::clamp(warn_ms / 8, 10, 1000)};
}

}  // namespace

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
      monitor_(shared_monitor != nullptr
                   ? std::move(shared_monitor)
                   : std::make_shared<AsyncEventMonitor>(info_.context, health_check_interval())),
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
