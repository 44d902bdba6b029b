// The process's devices: built once, at the first call that needs them, from config().devices,
// and kept until exit. Building them also places the functions of one adapter on one PCI device
// (VROCE_PCI_FUNCTIONS) and, with VROCE_SYSFS_ROOT, writes the fake sysfs tree, which is why the
// registry sits above both device/ and sysfs/.
#pragma once

#include <infiniband/verbs.h>

#include <span>

#include "device/device.h"

namespace vroce::abi {

// All devices of this process, in config order.
std::span<device::Device* const> devices();

// The Device behind a public ibv_device pointer, or nullptr for a pointer we did not hand out.
device::Device* device_from_ibv(ibv_device* dev) noexcept;

}  // namespace vroce::abi
