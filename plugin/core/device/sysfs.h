// What the plugin reads from sysfs about a verbs device, under a configurable root
// (NCCL_ROCE_SYSFS_ROOT, default /sys) so tests and containers can point it at another tree:
// the device's PCI path, a GID entry's RoCE version, and small attribute files in general.
// Parsers are pure and unit-tested on fixture trees.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/device/gid_selection.h"

namespace roce::sysfs {

// <root>/class/infiniband/<device>
std::string device_dir(const std::string& root, const std::string& device);

// Contents of a small attribute file. On failure returns std::nullopt and sets *error_number
// (ENOENT when absent; the kernel answers EINVAL for GID slots that are not in use).
std::optional<std::string> read_attribute(const std::string& path, int* error_number);

struct PciPath {
  std::optional<std::string> path;  // realpath of <device_dir>/device, when it is a PCI function
  std::string reason;               // why there is none (for the INFO line)
};

// realpath(<device_dir>/device), accepted only when it resolves to an existing directory named
// like a PCI function ("0000:3b:00.0") whose subsystem is the PCI bus (or, in trees without a
// subsystem link, which has a vendor attribute).
PciPath resolve_pci_path(const std::string& root, const std::string& device);

// "RoCE v2" -> RoceV2; "RoCE v1" and "IB/RoCE v1" -> RoceV1; anything else -> Unknown.
GidType parse_gid_type(std::string_view text) noexcept;

// <device_dir>/ports/<port>/gid_attrs/types/<index>; Unknown when the file is missing or the
// kernel refuses to read it (EINVAL for unused slots, and in some containers).
GidType read_gid_type(const std::string& root, const std::string& device, int port, int index);

}  // namespace roce::sysfs
