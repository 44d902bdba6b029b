// Port filtering and naming: see port_selection.h.
#include "core/device/port_selection.h"

#include <fmt/format.h>

#include <map>

namespace roce {

PortSelection select_ports(std::span<const DeviceSnapshot> devices, const HcaFilter& filter) {
  PortSelection selection;
  for (size_t d = 0; d < devices.size(); ++d) {
    const DeviceSnapshot& device = devices[d];
    for (size_t p = 0; p < device.ports.size(); ++p) {
      const PortSnapshot& port = device.ports[p];
      std::string reason;
      if (port.state != IBV_PORT_ACTIVE) {
        reason = fmt::format("state {}, not ACTIVE", port_state_name(port.state));
      } else if (port.link_layer != IBV_LINK_LAYER_ETHERNET) {
        reason = fmt::format("link layer {}; this plugin drives RoCE (Ethernet) ports only",
                             link_layer_name(port.link_layer));
      } else if (!filter.matches(device.name, port.port)) {
        reason = "not selected by NCCL_IB_HCA";
      }
      if (reason.empty()) {
        selection.usable.push_back({d, p});
      } else {
        selection.skipped.push_back({device.name, port.port, std::move(reason)});
      }
    }
  }
  return selection;
}

std::vector<std::string> plugin_device_names(std::span<const NamedPort> ports) {
  std::map<std::string, int> ports_per_device;
  for (const auto& port : ports) {
    ++ports_per_device[port.device];
  }
  std::vector<std::string> names;
  names.reserve(ports.size());
  for (const auto& port : ports) {
    names.push_back(ports_per_device[port.device] > 1 ? fmt::format("{}:{}", port.device, port.port)
                                                      : port.device);
  }
  return names;
}

const char* port_state_name(ibv_port_state state) noexcept {
  switch (state) {
    case IBV_PORT_NOP:
      return "NOP";
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
  }
  return "UNKNOWN";
}

const char* link_layer_name(uint8_t link_layer) noexcept {
  switch (link_layer) {
    case IBV_LINK_LAYER_UNSPECIFIED:
      return "unspecified";
    case IBV_LINK_LAYER_INFINIBAND:
      return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET:
      return "Ethernet";
    default:
      return "unknown";
  }
}

}  // namespace roce
