// Plugin initialisation and teardown: see plugin.h.
#include "core/plugin.h"

#include <fmt/format.h>

#include <map>

#include "core/device/hca_filter.h"
#include "core/device/init_banner.h"
#include "core/device/traffic_class.h"
#include "core/memory/gdr_probe.h"
#include "core/memory/gdr_staging.h"
#include "telemetry/stats_writer.h"
#include "util/config.h"
#include "util/log.h"
#include "verbs/error.h"
#include "verbs/qp_attributes.h"

namespace roce {
namespace {

const char* gid_type_text(const GidSelection& gid) {
  return gid.type_unknown ? "type unknown, used as RoCE v2" : gid_type_name(gid.entry.type);
}

}  // namespace

Plugin& Plugin::instance() {
  static Plugin plugin;
  return plugin;
}

Plugin::~Plugin() {
  // dlclose without a final finalize (v8..v10 never call one): stop the threads now, and write
  // the statistics file one last time.
  telemetry::stop_stats_writer();
  devices_.clear();
  library_.reset();
}

bool Plugin::initialized() const {
  const std::lock_guard lock(mutex_);
  return refs_ > 0;
}

int Plugin::physical_device_count() const {
  const std::lock_guard lock(mutex_);
  return refs_ > 0 ? static_cast<int>(devices_.size()) : 0;
}

int Plugin::device_count() const {
  const std::lock_guard lock(mutex_);
  return refs_ > 0 ? static_cast<int>(devices_.size() + virtual_devices_.size()) : 0;
}

std::shared_ptr<DeviceRuntime> Plugin::device(int dev) const {
  const std::lock_guard lock(mutex_);
  if (refs_ == 0 || dev < 0) {
    return nullptr;
  }
  const auto physical = static_cast<int>(devices_.size());
  if (dev < physical) {
    return devices_[static_cast<size_t>(dev)];
  }
  const auto virtual_index = static_cast<size_t>(dev - physical);
  if (virtual_index >= virtual_devices_.size()) {
    return nullptr;
  }
  return devices_[static_cast<size_t>(virtual_devices_[virtual_index].front())];
}

Result<int> Plugin::add_virtual_device(std::span<const int> members) {
  const std::lock_guard lock(mutex_);
  if (refs_ == 0) {
    return failure("init has not succeeded");
  }
  const auto physical = static_cast<int>(devices_.size());
  if (members.size() < 2 || members.size() > static_cast<size_t>(kMaxVirtualMembers)) {
    return failure(fmt::format("a virtual NIC has 2 to {} members, not {}", kMaxVirtualMembers,
                               members.size()));
  }
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= physical) {
      return failure(
          fmt::format("member {} is device {}, which is not one of the {} physical "
                      "devices (a virtual NIC is made of ports, not of virtual NICs)",
                      i, members[i], physical));
    }
    for (size_t j = 0; j < i; ++j) {
      if (members[j] == members[i]) {
        return failure(fmt::format("device {} is named twice", members[i]));
      }
    }
  }
  const std::vector<int> wanted(members.begin(), members.end());
  for (size_t k = 0; k < virtual_devices_.size(); ++k) {
    if (virtual_devices_[k] == wanted) {
      return physical + static_cast<int>(k);
    }
  }
  virtual_devices_.push_back(wanted);
  return physical + static_cast<int>(virtual_devices_.size() - 1);
}

std::vector<int> Plugin::members_of(int dev) const {
  const std::lock_guard lock(mutex_);
  if (refs_ == 0 || dev < 0) {
    return {};
  }
  const auto physical = static_cast<int>(devices_.size());
  if (dev < physical) {
    return {dev};
  }
  const auto virtual_index = static_cast<size_t>(dev - physical);
  return virtual_index < virtual_devices_.size() ? virtual_devices_[virtual_index]
                                                 : std::vector<int>{};
}

ncclResult_t Plugin::init(ncclDebugLogger_t logger) {
  log::set_nccl_logger(logger);
  const std::lock_guard lock(mutex_);
  if (refs_ > 0) {
    ++refs_;
    return ncclSuccess;
  }
  ncclResult_t result = start_locked();
  if (result == ncclSuccess) {
    refs_ = 1;
  } else {
    devices_.clear();
    library_.reset();
  }
  return result;
}

bool Plugin::finalize() noexcept {
  std::vector<std::shared_ptr<DeviceRuntime>> released;
  {
    const std::lock_guard lock(mutex_);
    if (refs_ == 0 || --refs_ > 0) {
      return false;
    }
    released.swap(devices_);
    virtual_devices_.clear();
  }
  // The writer's last write first, while the devices (and their fabric counters) are still
  // there; then the devices, outside the lock: stopping async threads waits for them.
  telemetry::stop_stats_writer();
  released.clear();
  return true;
}

ncclResult_t Plugin::start_locked() {
  if (const Status loaded = load_config(); !loaded) {
    ROCE_WARN(NCCL_INIT | NCCL_ENV, "invalid setting: {}", loaded.error());
    return ncclInvalidUsage;
  }
  const Config& cfg = config();
  if (const auto ifname = parse_hca_filter(cfg.socket_ifname); !ifname) {
    ROCE_WARN(NCCL_INIT | NCCL_NET,
              "RoCE plugin disabled: NCCL_SOCKET_IFNAME='{}' is malformed: {}", cfg.socket_ifname,
              ifname.error());
    return ncclInvalidUsage;
  }
  Result<std::shared_ptr<const ibv::Library>> loaded = ibv::Library::open(cfg.ibverbs_lib);
  if (!loaded) {
    ROCE_WARN(NCCL_INIT | NCCL_NET, "RoCE plugin disabled: {}", loaded.error());
    return ncclSystemError;
  }
  library_ = std::move(*loaded);

  Result<DiscoveryResult> discovered =
      discover_devices(library_, DiscoveryOptions::from_config(cfg));
  if (!discovered) {
    ROCE_WARN(NCCL_INIT | NCCL_NET, "RoCE plugin disabled: {}", discovered.error());
    return ncclInvalidUsage;
  }
  DiscoveryResult found = std::move(*discovered);
  if (found.devices.empty()) {
    if (cfg.ib_hca.empty()) {
      ROCE_WARN(NCCL_INIT | NCCL_NET,
                "RoCE plugin disabled: no usable RoCE port ({}); check the ports are ACTIVE with "
                "ibv_devinfo",
                found.skipped_summary());
    } else {
      ROCE_WARN(NCCL_INIT | NCCL_NET,
                "RoCE plugin disabled: NCCL_IB_HCA='{}' selects no usable RoCE port; the ports "
                "that exist: {}; name one of them ([^][=]name[:port], e.g. ={}) or unset "
                "NCCL_IB_HCA",
                cfg.ib_hca, found.skipped_summary(), found.example_port());
    }
    return ncclSystemError;
  }

  // A configured class (or clear-to-send class) that a host-wide override would rewrite: refuse
  // now, before any comm.
  for (const PluginDevice& dev : found.devices) {
    if (!dev.tc_override) {
      continue;
    }
    for (const auto& [setting, requested] :
         {std::pair{"NCCL_ROCE_TC", cfg.traffic_class},
          std::pair{"NCCL_IB_FIFO_TC", cfg.fifo_traffic_class}}) {
      if (!requested) {
        continue;
      }
      if (const Status agrees = check_tc_override(*dev.tc_override, *requested, setting); !agrees) {
        ROCE_WARN(NCCL_INIT | NCCL_NET, "RoCE plugin disabled: dev {} port {}: {}", dev.name,
                  dev.port, agrees.error());
        return ncclInvalidUsage;
      }
    }
  }

  set_staging_policy(cfg.require_gdr, cfg.sysfs_root);
  const RelaxedOrdering relaxed =
      decide_relaxed_ordering(cfg.pci_relaxed_ordering, library_->fn().reg_mr_iova2 != nullptr);
  if (!relaxed.note.empty()) {
    ROCE_INFO(NCCL_INIT | NCCL_NET, "{}", relaxed.note);
  }

  // Ports of one verbs device share its context, and so its async-event monitor and GPUDirect
  // answer.
  std::map<verbs::Context*, std::shared_ptr<AsyncEventMonitor>> monitors;
  std::map<verbs::Context*, GdrSupport> gdr_by_context;
  std::vector<std::shared_ptr<DeviceRuntime>> devices;
  try {
    for (PluginDevice& dev : found.devices) {
      verbs::Context* ctx = dev.context.get();
      auto gdr_it = gdr_by_context.find(ctx);
      if (gdr_it == gdr_by_context.end()) {
        gdr_it =
            gdr_by_context.emplace(ctx, detect_gdr(dev.context, cfg.sysfs_root, cfg.dmabuf_enable))
                .first;
      }
      const GdrSupport& gdr = gdr_it->second;
      if (const Status required = check_gdr_requirement(gdr, cfg.require_gdr); !required) {
        ROCE_WARN(NCCL_INIT | NCCL_NET, "RoCE plugin disabled: dev {}: {}", dev.name,
                  required.error());
        return ncclSystemError;
      }
      auto monitor_it = monitors.find(ctx);
      std::shared_ptr<AsyncEventMonitor> shared =
          monitor_it != monitors.end() ? monitor_it->second : nullptr;
      auto runtime = std::make_shared<DeviceRuntime>(static_cast<int>(devices.size()),
                                                     std::move(dev), gdr, relaxed.enabled, shared);
      monitors[ctx] = runtime->monitor();
      devices.push_back(std::move(runtime));
    }
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    ROCE_WARN(NCCL_INIT | NCCL_NET, "RoCE plugin disabled: {}", e.what());
    return ncclSystemError;
  }

  for (const auto& dev : devices) {
    const PluginDevice& info = dev->info();
    BannerFacts facts;
    facts.device = info.name;
    facts.port = info.port;
    facts.pci_path = info.pci_path.value_or("");
    facts.speed_text = info.speed_text;
    facts.gid_index = info.gid.index;
    facts.gid_type = gid_type_text(info.gid);
    facts.gid_address = dev->gid_text();
    facts.traffic_class = cfg.traffic_class;
    facts.traffic_class_source = traffic_class_source_name(cfg.traffic_class_source);
    facts.service_level = cfg.service_level;
    facts.fifo_traffic_class = cfg.fifo_traffic_class;
    facts.host_override = dev->global_class_override();
    facts.mtu_bytes = verbs::mtu_bytes(info.active_mtu);
    facts.gdr_mode = dev->gdr().banner_mode();
    facts.relaxed_ordering = dev->relaxed_ordering();
    facts.qps_per_connection = cfg.qps_per_connection;
    facts.version = ROCE_VERSION;
    ROCE_INFO(NCCL_INIT | NCCL_NET, "{}", format_init_banner(facts));
  }
  devices_ = std::move(devices);
  telemetry::start_stats_writer({cfg.stats_file, cfg.stats_interval_ms, cfg.stats_summary});
  return ncclSuccess;
}

}  // namespace roce
