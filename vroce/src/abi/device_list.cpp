// Device enumeration entry points: ibv_get_device_list and the per-device getters.
#include <cerrno>
#include <cstdlib>
#include <span>

#include "abi/device_registry.h"
#include "abi/export.h"
#include "device/device.h"

using vroce::device::Device;

VROCE_EXPORT ibv_device** ibv_get_device_list(int* num_devices) {
  try {
    std::span<Device* const> all = vroce::abi::devices();
    // malloc, not new: the list is the caller's until ibv_free_device_list, a C API. An array
    // of pointers, NULL-terminated, so the element size is a pointer's.
    auto** list = static_cast<ibv_device**>(
        std::calloc(all.size() + 1, sizeof(ibv_device*)));  // NOLINT(bugprone-sizeof-expression)
    if (list == nullptr) {
      errno = ENOMEM;
      return nullptr;
    }
    for (size_t i = 0; i < all.size(); ++i) {
      list[i] = all[i]->ibv();
    }
    if (num_devices != nullptr) {
      *num_devices = static_cast<int>(all.size());
    }
    return list;
  } catch (...) {
    errno = ENOMEM;
    return nullptr;
  }
}

VROCE_EXPORT void ibv_free_device_list(ibv_device** list) {
  // Devices live for the whole process, so only the array is the caller's to free.
  std::free(list);
}

VROCE_EXPORT const char* ibv_get_device_name(ibv_device* device) {
  if (device == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  return device->name;
}

VROCE_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
  Device* dev = vroce::abi::device_from_ibv(device);
  if (dev == nullptr) {
    errno = EINVAL;
    return 0;
  }
  return dev->node_guid();
}

VROCE_EXPORT int ibv_get_device_index(ibv_device* device) {
  Device* dev = vroce::abi::device_from_ibv(device);
  if (dev == nullptr) {
    errno = EINVAL;
    return -1;
  }
  return dev->index();
}
