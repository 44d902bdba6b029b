// Which verbs ports become plugin devices, decided on snapshots of what the devices reported, so
// the rules are unit-tested without a device: a port is used when it is ACTIVE, its link layer
// is Ethernet (RoCE) and NCCL_IB_HCA allows it. Also the plugin device names: the verbs device
// name, plus ":<port>" when that device contributes more than one port.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/device/hca_filter.h"

namespace roce {

struct PortSnapshot {
  int port = 1;
  ibv_port_state state = IBV_PORT_NOP;
  uint8_t link_layer = IBV_LINK_LAYER_UNSPECIFIED;
  uint32_t speed_code = 0;  // active_speed_ex, else active_speed
  uint32_t width_code = 0;  // active_width
  ibv_mtu active_mtu = IBV_MTU_1024;
  int gid_table_length = 0;
};

struct DeviceSnapshot {
  std::string name;
  std::vector<PortSnapshot> ports;
};

struct PortRef {
  size_t device = 0;  // index into the snapshots
  size_t port = 0;    // index into that snapshot's ports
};

struct SkippedPort {
  std::string device;
  int port = 0;
  std::string reason;  // "state DOWN, not ACTIVE", "excluded by NCCL_IB_HCA", ...
};

struct PortSelection {
  std::vector<PortRef> usable;  // in device order, then port order
  std::vector<SkippedPort> skipped;
};

PortSelection select_ports(std::span<const DeviceSnapshot> devices, const HcaFilter& filter);

// Plugin device names for the final list of (device name, port) pairs, in the same order.
struct NamedPort {
  std::string device;
  int port = 0;
};
std::vector<std::string> plugin_device_names(std::span<const NamedPort> ports);

const char* port_state_name(ibv_port_state state) noexcept;  // "ACTIVE", "DOWN", ...
const char* link_layer_name(uint8_t link_layer) noexcept;    // "Ethernet", "InfiniBand", ...

}  // namespace roce
