// vroce_inject_port_event: see abi/test_hooks.h.
#include "abi/test_hooks.h"

#include <cerrno>
#include <cstring>

#include "abi/device_registry.h"
#include "abi/export.h"
#include "device/device.h"

namespace {

bool is_port_or_device_event(int type) {
  switch (type) {
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_DEVICE_FATAL:
      return true;
    default:
      return false;
  }
}

}  // namespace

VROCE_EXPORT int vroce_inject_port_event(const char* device_name, int event_type) {
  if (!is_port_or_device_event(event_type)) {
    errno = EINVAL;
    return -1;
  }
  if (device_name == nullptr) {
    errno = ENODEV;
    return -1;
  }
  try {
    for (vroce::device::Device* device : vroce::abi::devices()) {
      if (device->name() == device_name) {
        return device->raise_port_event(static_cast<ibv_event_type>(event_type));
      }
    }
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
  errno = ENODEV;
  return -1;
}
