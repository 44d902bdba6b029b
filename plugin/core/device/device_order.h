// The order and port numbers in which the plugin's devices are offered to NCCL, as NCCL's IB
// transport computes them:
// - NCCL_IB_DEVICE_PCI_ORDER (default on): sorted by PCI path, then port, so that every node
//   numbers its NICs alike whatever order the verbs device list has (udev names differ between
//   nodes). Devices without a PCI path follow, in list order.
// - The reported port is the verbs port plus a "real port": the number of earlier devices that
//   are other functions of the same PCI device (paths equal once folded, below).
// - The reported pciPath is folded as net_ib folds it (NCCL_IB_MERGE_NICS, NCCL_IB_MERGE_VFS):
//   the function digit set to 0, and with NCCL_IB_MERGE_VFS the two device digits too, so every
//   function of a card (and its virtual functions) shows NCCL one PCI node. NCCL hangs NICs of
//   one PCI node under one topology node, and its default merge level (PORT) then fuses them
//   into one virtual NIC through makeVDevice. The two
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

// ".../0000:3b:00.1" -> ".../0000:3b:00.0"; with merge_vfs ".../0000:3b:02.3" ->
// ".../0000:3b:00.0". A path whose last component is not a PCI address (DDDD:BB:DD.F) is
// returned unchanged.
std::string fold_pci_path(std::string_view pci_path, bool merge_vfs);

// Stable sort by (PCI path, port); devices without a PCI path last.
void sort_by_pci_path(std::vector<PluginDevice>& devices);

// Sets real_port of each device from the devices before it (call after sorting): the earlier
// devices of another verbs device whose path folds (merge_vfs as NCCL_IB_MERGE_VFS) to the same.
void assign_real_ports(std::vector<PluginDevice>& devices, bool merge_vfs = true);

// Sets reported_pci_path of each device: folded when merge_nics (NCCL_IB_MERGE_NICS), else the
// real path.
void assign_reported_pci_paths(std::vector<PluginDevice>& devices, bool merge_nics, bool merge_vfs);

}  // namespace roce
