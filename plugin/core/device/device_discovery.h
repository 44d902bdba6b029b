// Device discovery: every ACTIVE Ethernet (RoCE) port of every verbs device that NCCL_IB_HCA
// allows becomes one plugin device, with everything getProperties and connection setup need
// (name, PCI path, GUID, speed, MTU, the GID table and the selected GID, any host-level
// traffic-class override) and the device's open Context, shared by the ports of one device.
//
// A port whose GID cannot be selected is never dropped silently: when NCCL_IB_GID_INDEX names an
// unusable entry, discovery fails with the selection's message (an init error); when the port
// has no RoCE v2 GID at all, it is skipped with a WARN naming it.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device/gid_selection.h"
#include "core/device/port_selection.h"
#include "core/device/tc_override.h"
#include "ibv/library.h"
#include "roce/result.h"
#include "util/config.h"
#include "verbs/context.h"

namespace roce {

struct PluginDevice {
  std::string name;      // unique: the verbs name, plus ":<port>" when it has several
  std::string ibv_name;  // the verbs device name ("mlx5_0", "vroce0")
  int port = 1;          // the verbs port (what QPs are created on)
  // Earlier devices that are other functions of the same PCI device (core/device/device_order.h):
  // NCCL is told port + real_port, as net_ib reports it.
  int real_port = 0;
  std::optional<std::string> pci_path;  // sysfs PCI function directory, when there is one
  // What getProperties tells NCCL: pci_path folded as net_ib folds it (device_order.h), so that
  // NCCL fuses the ports of one card; the real path when NCCL_IB_MERGE_NICS=0.
  std::optional<std::string> reported_pci_path;
  uint64_t guid = 0;       // sys_image_guid as reported (one per ASIC)
  int speed_mbps = 0;      // 0 when the port reported codes we do not know (WARNed)
  std::string speed_text;  // "4X NDR (400 Gb/s)"
  int max_comms = 0;       // max_qp
  ibv_mtu active_mtu = IBV_MTU_1024;
  uint8_t link_layer = IBV_LINK_LAYER_ETHERNET;
  uint32_t vendor_id = 0;
  uint32_t vendor_part_id = 0;
  std::vector<GidTableEntry> gid_table;
  GidSelection gid;                       // the GID this device's QPs use
  std::optional<TcOverride> tc_override;  // mlx5's tc/<port>/traffic_class, when present
  // The rail and plane the NCCL_IB_HCA entry that selected this port gave it (name:port:rail:
  // plane), NCCL_NET_ID_UNDEF (-1) when none did; NCCL 2.30 keeps a channel on one rail.
  int16_t rail_id = -1;
  int16_t plane_id = -1;
  std::shared_ptr<verbs::Context> context;
};

struct DiscoveryOptions {
  std::string ib_hca;               // NCCL_IB_HCA
  GidSelectionPolicy gid_policy;    // family, range, RoCE version, NCCL_IB_GID_INDEX
  std::string sysfs_root = "/sys";  // NCCL_ROCE_SYSFS_ROOT
  bool pci_order = true;            // NCCL_IB_DEVICE_PCI_ORDER
  bool query_port_speed = true;     // NCCL_IB_QUERY_PORT_SPEED
  bool merge_nics = true;           // NCCL_IB_MERGE_NICS
  bool merge_vfs = true;            // NCCL_IB_MERGE_VFS

  static DiscoveryOptions from_config(const Config& config);
};

struct DiscoveryResult {
  std::vector<PluginDevice> devices;
  std::vector<SkippedPort> skipped;  // every port not used, with the reason

  // "vroce0 port 1: state DOWN, not ACTIVE; mlx5_1 port 1: not selected by NCCL_IB_HCA", or
  // "no verbs devices" — for the one WARN line when nothing is usable.
  std::string skipped_summary() const;
  // "vroce0:1": the first port that exists, for an example in a message ("mlx5_0:1" if none).
  std::string example_port() const;
};

// Fails with one line naming the setting or device at fault and the fix (bad NCCL_IB_HCA, bad
// NCCL_IB_GID_INDEX, an unreadable traffic-class override, device list failure). Devices that
// cannot be opened or queried are skipped with a WARN. An empty result is not an error here: the
// caller decides (init fails with skipped_summary()).
Result<DiscoveryResult> discover_devices(const std::shared_ptr<const ibv::Library>& lib,
                                         const DiscoveryOptions& options);

}  // namespace roce
