// The order and port numbers in which the plugin's devices are offered to NCCL, as NCCL's IB
// transport computes them:
// - NCCL_IB_DEVICE_PCI_ORDER (default on): sorted by PCI path, then port, so that every node
//   numbers its NICs alike whatever order the verbs device list has (udev names differ between
//   nodes). Devices without a PCI path follow, in list order.
// - The reported port is the verbs port plus a "real port": the number of earlier devices that
//   are other functions of the same PCI device (paths equal up to the function digit). The two
//   functions of a dual-port NIC both have verbs port 1 and share the ASIC's sys_image_guid;
//   NCCL's topology search shares bandwidth between NICs with the same (guid, port), so without
//   this it would budget one port's bandwidth for both.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device/device_discovery.h"

namespace roce {

// ".../0000:3b:00.1" -> ".../0000:3b:00": the PCI device of a function's path (unchanged when
// the last component has no function digit).
std::string_view pci_device_of(std::string_view pci_path) noexcept;

// Stable sort by (PCI path, port); devices without a PCI path last.
void sort_by_pci_path(std::vector<PluginDevice>& devices);

// Sets real_port of each device from the devices before it (call after sorting).
void assign_real_ports(std::vector<PluginDevice>& devices);

}  // namespace roce
