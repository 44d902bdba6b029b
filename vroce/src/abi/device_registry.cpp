// The process-wide device registry built from config().devices.
#include "abi/device_registry.h"

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "device/device_netns.h"
#include "device/netdev.h"
#include "sysfs/fake_sysfs.h"
#include "util/log.h"
#include "util/result.h"

namespace vroce::abi {
namespace {

// VROCE_PCI_FUNCTIONS: each group becomes the functions of one PCI device, on the bus of its
// first member that exists (a device that failed to come up leaves its function number unused,
// so the others keep the numbers the setting gave them).
void place_pci_functions(const std::vector<device::Device*>& devices, const Config& cfg) {
  auto find = [&](const std::string& name) -> device::Device* {
    for (device::Device* device : devices) {
      if (device->name() == name) {
        return device;
      }
    }
    return nullptr;
  };
  for (const std::vector<std::string>& group : cfg.pci_functions) {
    device::Device* first = nullptr;
    for (size_t function = 0; function < group.size(); ++function) {
      device::Device* device = find(group[function]);
      if (device == nullptr) {
        continue;
      }
      if (first == nullptr) {
        first = device;
      }
      // The functions of one adapter share its sys_image_guid, as a ConnectX's PFs do.
      std::optional<uint64_t> guid;
      if (!cfg.sys_image_guid) {
        guid = first->node_guid();
      }
      device->place_on_pci_device(first->index(), static_cast<int>(function), guid);
    }
  }
}

// VROCE_PORT_EVENTS: one thread raises the scheduled port events, each at its time after the
// devices came up, as vroce_inject_port_event does. Detached: it holds nothing at exit but the
// devices, which are never freed.
void schedule_port_events(const std::vector<device::Device*>& devices, const Config& cfg) {
  if (cfg.port_events.empty()) {
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  std::thread([devices, events = cfg.port_events, start] {
    for (const PortEventSpec& event : events) {
      std::this_thread::sleep_until(start + std::chrono::milliseconds(event.at_ms));
      for (device::Device* device : devices) {
        if (device->name() == event.device) {
          VROCE_LOG(Info, "VROCE_PORT_EVENTS: %s port %s at %u ms", event.device.c_str(),
                    event.up ? "up" : "down", event.at_ms);
          device->raise_port_event(event.up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
        }
      }
    }
  }).detach();
}

struct Registry {
  std::vector<device::Device*> devices;  // never freed: handed-out pointers stay valid until exit
};

Registry& registry() {
  static Registry* instance = [] {
    auto* built = new Registry;
    device::remember_device_netns();  // the devices' addresses are this namespace's
    const Config& cfg = config();
    device::InterfaceTable table = device::read_interface_table();
    std::set<std::string> addresses;
    for (const DeviceSpec& spec : cfg.devices) {
      Result<std::unique_ptr<device::Device>> created = device::Device::create(
          spec, static_cast<int>(built->devices.size()), cfg.port_speed_gbps, table);
      if (!created) {
        VROCE_LOG(Error, "device %s (%s) is not available: %s", spec.name.c_str(),
                  spec.address_or_netdev.c_str(), created.error().c_str());
        continue;
      }
      std::unique_ptr<device::Device> device = std::move(*created);
      std::string address = device::address_to_text(device->address());
      if (!addresses.insert(address).second) {
        VROCE_LOG(Error,
                  "device %s (%s) is not available: %s is already bound to another vroce device; "
                  "give each device its own address in VROCE_DEVICES",
                  spec.name.c_str(), spec.address_or_netdev.c_str(), address.c_str());
        continue;
      }
      built->devices.push_back(device.release());
    }
    place_pci_functions(built->devices, cfg);
    schedule_port_events(built->devices, cfg);
    if (cfg.sysfs_root) {
      std::vector<std::string> errors =
          sysfs::write_fake_sysfs(*cfg.sysfs_root, built->devices, cfg);
      for (const std::string& error : errors) {
        VROCE_LOG(Error, "fake sysfs: %s", error.c_str());
      }
    }
    return built;
  }();
  return *instance;
}

}  // namespace

std::span<device::Device* const> devices() {
  return registry().devices;
}

device::Device* device_from_ibv(ibv_device* dev) noexcept {
  if (dev == nullptr) {
    return nullptr;
  }
  for (device::Device* device : registry().devices) {
    if (device->ibv() == dev) {
      return device;
    }
  }
  return nullptr;
}

}  // namespace vroce::abi
