// Device order and real ports: see device_order.h.
#include "core/device/device_order.h"

#include <algorithm>

namespace roce {

std::string_view pci_device_of(std::string_view pci_path) noexcept {
  const size_t slash = pci_path.rfind('/');
  const size_t dot = pci_path.rfind('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) {
    return pci_path;
  }
  return pci_path.substr(0, dot);
}

void sort_by_pci_path(std::vector<PluginDevice>& devices) {
  std::stable_sort(devices.begin(), devices.end(),
                   [](const PluginDevice& a, const PluginDevice& b) {
                     if (a.pci_path.has_value() != b.pci_path.has_value()) {
                       return a.pci_path.has_value();  // with a path first
                     }
                     if (a.pci_path && *a.pci_path != *b.pci_path) {
                       return *a.pci_path < *b.pci_path;
                     }
                     return a.pci_path && a.port < b.port;
                   });
}

void assign_real_ports(std::vector<PluginDevice>& devices) {
  for (size_t i = 0; i < devices.size(); ++i) {
    PluginDevice& dev = devices[i];
    dev.real_port = 0;
    if (!dev.pci_path) {
      continue;
    }
    const std::string_view mine = pci_device_of(*dev.pci_path);
    for (size_t j = 0; j < i; ++j) {
      const PluginDevice& earlier = devices[j];
      // Ports of one verbs device already differ by port number; only other functions count.
      if (earlier.pci_path && earlier.ibv_name != dev.ibv_name &&
          earlier.pci_path != dev.pci_path && pci_device_of(*earlier.pci_path) == mine) {
        ++dev.real_port;
      }
    }
  }
}

}  // namespace roce
