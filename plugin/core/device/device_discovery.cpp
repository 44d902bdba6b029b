// Device discovery over verbs: see device_discovery.h. The decisions (which ports, which names,
// which GID) are the pure functions of port_selection.h and gid_selection.h; this file gathers
// their inputs from the devices and sysfs.
#include "core/device/device_discovery.h"

#include <cerrno>

#include "core/device/device_order.h"
#include "core/device/gid_table.h"
#include "core/device/hca_filter.h"
#include "core/device/port_speed.h"
#include "core/device/sysfs.h"
#include "ibv/port_query.h"
#include "util/log.h"
#include "verbs/device_list.h"
#include "verbs/error.h"
#include "verbs/qp_attributes.h"

namespace roce {
namespace {

// NCCL_IB_QUERY_PORT_SPEED: the port's speed from ibv_query_port_speed (rdma-core 62+) in Mb/s;
// std::nullopt when it is off, absent or fails (then the codes decide).
std::optional<int> query_speed_mbps(const verbs::Context& ctx, int port,
                                    const DiscoveryOptions& options) {
  const auto query = ctx.lib().fn().query_port_speed;
  if (!options.query_port_speed || query == nullptr) {
    return std::nullopt;
  }
  uint64_t speed = 0;  // units of 100 Mb/s
  errno = 0;
  const int rc = query(ctx.get(), static_cast<uint32_t>(port), &speed);
  if (rc != 0 || speed == 0 || speed > 100000000) {
    const int err = rc > 0 ? rc : (errno != 0 ? errno : EINVAL);
    ROCE_INFO(NCCL_INIT,
              "dev {} port {}: ibv_query_port_speed gave no speed ({}); using the width and "
              "speed codes",
              ctx.name(), port, rc != 0 ? verbs::errno_text(err) : std::string("0"));
    return std::nullopt;
  }
  return static_cast<int>(speed * 100);
}

struct OpenDevice {
  std::shared_ptr<verbs::Context> context;
  DeviceSnapshot snapshot;
};

Result<std::vector<OpenDevice>> open_devices(const std::shared_ptr<const ibv::Library>& lib,
                                             std::vector<SkippedPort>& skipped) {
  std::unique_ptr<verbs::DeviceList> list;
  try {
    list = std::make_unique<verbs::DeviceList>(lib);
  } catch (const verbs::VerbsError& e) {
    return failure(e.what());
  }
  std::vector<OpenDevice> opened;
  for (ibv_device* device : list->devices()) {
    OpenDevice entry;
    try {
      entry.context = verbs::Context::open(lib, device);
    } catch (const verbs::VerbsError& e) {
      ROCE_WARN(NCCL_INIT, "{}; skipping it", e.what());
      const char* name = lib->fn().get_device_name(device);
      skipped.push_back({name != nullptr ? name : "?", 0, e.what()});
      continue;
    }
    entry.snapshot.name = entry.context->name();
    const int ports = entry.context->device_attr().phys_port_cnt;
    for (int port = 1; port <= ports; ++port) {
      ibv::PortAttributes attrs;
      try {
        attrs = entry.context->query_port(static_cast<uint8_t>(port));
      } catch (const verbs::VerbsError& e) {
        ROCE_WARN(NCCL_INIT, "{}; skipping the port", e.what());
        skipped.push_back({entry.snapshot.name, port, e.what()});
        continue;
      }
      PortSnapshot snap;
      snap.port = port;
      snap.state = attrs.attr.state;
      snap.link_layer = attrs.attr.link_layer;
      snap.speed_code = ibv::effective_speed_code(attrs);
      snap.width_code = attrs.attr.active_width;
      snap.active_mtu = attrs.attr.active_mtu;
      snap.gid_table_length = attrs.attr.gid_tbl_len;
      entry.snapshot.ports.push_back(snap);
    }
    opened.push_back(std::move(entry));
  }
  return opened;
}

}  // namespace

DiscoveryOptions DiscoveryOptions::from_config(const Config& config) {
  DiscoveryOptions options;
  options.ib_hca = config.ib_hca;
  options.gid_policy.family = config.addr_family;
  options.gid_policy.addr_range = config.addr_range;
  options.gid_policy.roce_version = config.roce_version;
  options.gid_policy.override_index = config.gid_index;
  options.sysfs_root = config.sysfs_root;
  options.pci_order = config.device_pci_order;
  options.query_port_speed = config.query_port_speed;
  options.merge_nics = config.merge_nics;
  options.merge_vfs = config.merge_vfs;
  return options;
}

std::string DiscoveryResult::skipped_summary() const {
  if (skipped.empty()) {
    return "no verbs devices found";
  }
  std::string out;
  for (const auto& port : skipped) {
    if (!out.empty()) {
      out += "; ";
    }
    out += port.port > 0 ? fmt::format("{} port {}: {}", port.device, port.port, port.reason)
                         : fmt::format("{}: {}", port.device, port.reason);
  }
  return out;
}

std::string DiscoveryResult::example_port() const {
  for (const auto& port : skipped) {
    if (port.port > 0) {
      return fmt::format("{}:{}", port.device, port.port);
    }
  }
  return "mlx5_0:1";
}

Result<DiscoveryResult> discover_devices(const std::shared_ptr<const ibv::Library>& lib,
                                         const DiscoveryOptions& options) {
  const auto filter = parse_hca_filter(options.ib_hca);
  if (!filter) {
    return failure(
        fmt::format("NCCL_IB_HCA='{}' is malformed: {}", options.ib_hca, filter.error()));
  }

  // Registered memory must survive fork() in frameworks that fork workers (as NCCL does).
  errno = 0;
  if (const int err = verbs::verbs_errno(lib->fn().fork_init()); err != 0) {
    ROCE_WARN(
        NCCL_INIT,
        "ibv_fork_init failed: {}; registered memory is not protected against "
        "fork() in this process (the kernel may not need it; set RDMAV_FORK_SAFE=1 to be sure)",
        verbs::errno_text(err));
  }

  DiscoveryResult result;
  Result<std::vector<OpenDevice>> listed = open_devices(lib, result.skipped);
  if (!listed) {
    return failure(listed.error());
  }
  std::vector<OpenDevice> opened = std::move(*listed);
  std::vector<DeviceSnapshot> snapshots;
  snapshots.reserve(opened.size());
  for (const auto& device : opened) {
    snapshots.push_back(device.snapshot);
  }

  const PortSelection selection = select_ports(snapshots, *filter);
  for (const auto& skipped : selection.skipped) {
    ROCE_INFO(NCCL_INIT, "dev {} port {}: not used: {}", skipped.device, skipped.port,
              skipped.reason);
    result.skipped.push_back(skipped);
  }

  std::vector<NamedPort> named;
  for (const PortRef& ref : selection.usable) {
    const OpenDevice& device = opened[ref.device];
    const PortSnapshot& port = device.snapshot.ports[ref.port];
    const verbs::Context& ctx = *device.context;

    PluginDevice plugin;
    plugin.ibv_name = ctx.name();
    plugin.port = port.port;
    if (const HcaEntry* entry = filter->selecting_entry(ctx.name(), port.port)) {
      plugin.rail_id = static_cast<int16_t>(entry->rail.value_or(-1));
      plugin.plane_id = static_cast<int16_t>(entry->plane.value_or(-1));
    }
    plugin.gid_table = read_gid_table(ctx, port.port, port.gid_table_length, options.sysfs_root);

    GidSelectionPolicy policy = options.gid_policy;
    policy.device_name = ctx.name();
    policy.port = port.port;
    auto gid = select_gid(plugin.gid_table, policy);
    if (!gid) {
      if (policy.override_index >= 0) {
        return failure(gid.error());
      }
      ROCE_WARN(NCCL_INIT, "dev {} port {}: no usable GID, skipping the port: {}", ctx.name(),
                port.port, gid.error());
      result.skipped.push_back({ctx.name(), port.port, gid.error()});
      continue;
    }
    if (gid->type_unknown) {
      ROCE_WARN(NCCL_INIT,
                "dev {} port {}: the type of GID index {} cannot be read (no "
                "_ibv_query_gid_ex and no sysfs gid_attrs); using it as RoCE v2 because "
                "NCCL_IB_GID_INDEX names it",
                ctx.name(), port.port, gid->index);
    }
    if (!gid->warning.empty()) {
      ROCE_WARN(NCCL_INIT, "dev {} port {}: {}", ctx.name(), port.port, gid->warning);
    }
    plugin.gid = *gid;

    const ibv_device_attr& attr = ctx.device_attr();
    plugin.guid = attr.sys_image_guid;
    plugin.max_comms = attr.max_qp;
    plugin.vendor_id = attr.vendor_id;
    plugin.vendor_part_id = attr.vendor_part_id;
    plugin.active_mtu = port.active_mtu;
    plugin.link_layer = port.link_layer;
    plugin.speed_text = describe_port_speed(port.speed_code, port.width_code);
    if (const auto queried = query_speed_mbps(ctx, port.port, options)) {
      plugin.speed_mbps = *queried;
      plugin.speed_text +=
          fmt::format(", ibv_query_port_speed {:g} Gb/s", static_cast<double>(*queried) / 1000.0);
    } else if (const auto speed = port_speed_mbps(port.speed_code, port.width_code)) {
      plugin.speed_mbps = *speed;
    } else {
      plugin.speed_mbps = clamped_port_speed_mbps(port.speed_code, port.width_code);
      ROCE_WARN(NCCL_INIT,
                "dev {} port {}: unknown link speed code ({}); reporting {} Mb/s, the highest "
                "known rate for it, as NCCL does",
                ctx.name(), port.port, plugin.speed_text, plugin.speed_mbps);
    }

    sysfs::PciPath pci = sysfs::resolve_pci_path(options.sysfs_root, ctx.name());
    if (pci.path) {
      plugin.pci_path = std::move(pci.path);
    } else {
      ROCE_INFO(NCCL_INIT, "dev {}: no PCI path ({}); NCCL attaches the NIC to the first CPU",
                ctx.name(), pci.reason);
    }

    Result<std::optional<TcOverride>> tc_override =
        read_tc_override(options.sysfs_root, ctx.name(), port.port);
    if (!tc_override) {
      return failure(fmt::format("dev {} port {}: {}", ctx.name(), port.port, tc_override.error()));
    }
    plugin.tc_override = std::move(*tc_override);
    if (plugin.tc_override && plugin.tc_override->any()) {
      ROCE_INFO(NCCL_INIT, "dev {} port {}: host-level traffic-class override in {}: {}{}",
                ctx.name(), port.port, plugin.tc_override->file,
                plugin.tc_override->global_class
                    ? fmt::format("global class {}", *plugin.tc_override->global_class)
                    : std::string("no global class"),
                plugin.tc_override->rules.empty()
                    ? std::string()
                    : fmt::format(", {} address rule(s)", plugin.tc_override->rules.size()));
    }

    plugin.context = device.context;
    named.push_back({plugin.ibv_name, plugin.port});
    result.devices.push_back(std::move(plugin));
  }

  const std::vector<std::string> names = plugin_device_names(named);
  for (size_t i = 0; i < result.devices.size(); ++i) {
    result.devices[i].name = names[i];
  }
  if (options.pci_order) {
    sort_by_pci_path(result.devices);
  }
  assign_real_ports(result.devices, options.merge_vfs);
  assign_reported_pci_paths(result.devices, options.merge_nics, options.merge_vfs);
  for (PluginDevice& dev : result.devices) {
    ROCE_INFO(NCCL_INIT,
              "dev {}: verbs {} port {} (reported as {}), pci {} (reported as {}), guid 0x{:016x}, "
              "{}, mtu {}, gid "
              "index {} ({} {}), max_qp {}",
              dev.name, dev.ibv_name, dev.port, dev.port + dev.real_port,
              dev.pci_path.value_or("none"), dev.reported_pci_path.value_or("none"), dev.guid,
              dev.speed_text, verbs::mtu_bytes(dev.active_mtu), dev.gid.index,
              gid_type_name(dev.gid.entry.type), gid_to_string(dev.gid.entry.gid), dev.max_comms);
  }
  return result;
}

}  // namespace roce
