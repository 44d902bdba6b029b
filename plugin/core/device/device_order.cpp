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

std::string fold_pci_path(std::string_view pci_path, bool merge_vfs) {
  std::string folded(pci_path);
  const size_t slash = folded.rfind('/');
  const size_t start = slash == std::string::npos ? 0 : slash + 1;
  // "DDDD:BB:DD.F": domain, bus, device, function.
  constexpr size_t kLength = 12;
  if (folded.size() - start != kLength || folded[start + 4] != ':' || folded[start + 7] != ':' ||
      folded[start + 10] != '.') {
    return folded;
  }
  folded[start + 11] = '0';
  if (merge_vfs) {
    folded[start + 8] = '0';
    folded[start + 9] = '0';
  }
  return folded;
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

void assign_real_ports(std::vector<PluginDevice>& devices, bool merge_vfs) {
  for (size_t i = 0; i < devices.size(); ++i) {
    PluginDevice& dev = devices[i];
    dev.real_port = 0;
    if (!dev.pci_path) {
      continue;
    }
    const std::string mine = fold_pci_path(*dev.pci_path, merge_vfs);
    for (size_t j = 0; j < i; ++j) {
      const PluginDevice& earlier = devices[j];
      // Ports of one verbs device already differ by port number; only other functions count.
      if (earlier.pci_path && earlier.ibv_name != dev.ibv_name &&
          earlier.pci_path != dev.pci_path && fold_pci_path(*earlier.pci_path, merge_vfs) == mine) {
        ++dev.real_port;
      }
    }
  }
}

void assign_reported_pci_paths(std::vector<PluginDevice>& devices, bool merge_nics,
                               bool merge_vfs) {
  for (PluginDevice& dev : devices) {
    dev.reported_pci_path.reset();
    if (dev.pci_path) {
      dev.reported_pci_path = merge_nics ? fold_pci_path(*dev.pci_path, merge_vfs) : *dev.pci_path;
    }
  }
}

}  // namespace roce
