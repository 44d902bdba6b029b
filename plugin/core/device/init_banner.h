// The one INFO line per device that init prints, so an operator sees at a glance what the plugin
// will run on: device and port, the GID (index, type, address), the traffic class with its DSCP
// and where it comes from, SL, MTU, GPUDirect mode, QPs per connection, and the version. Pure:
// built from plain facts and unit-tested.
#pragma once

#include <optional>
#include <string>

namespace roce {

struct BannerFacts {
  std::string device;  // plugin device name
  int port = 1;
  std::string pci_path;    // empty: none
  std::string speed_text;  // "4X NDR (400 Gb/s)"
  int gid_index = 0;
  std::string gid_type;              // "RoCE v2"
  std::string gid_address;           // "::ffff:10.0.0.1"
  std::optional<int> traffic_class;  // configured in the environment; nullopt: per communicator
  std::string traffic_class_source;  // "NCCL_ROCE_TC", "NCCL_IB_TC", ...
  std::optional<int> service_level;  // NCCL_IB_SL; nullopt: 0 unless a peer configures one
  std::optional<int> fifo_traffic_class;  // NCCL_IB_FIFO_TC: the receiver's data QPs
  std::optional<int> host_override;       // the port's global tc override
  int mtu_bytes = 1024;
  std::string gdr_mode;  // "peermem", "dma-buf", "none", ...
  bool relaxed_ordering = false;
  int qps_per_connection = 1;
  std::string version;
};

std::string format_init_banner(const BannerFacts& facts);

}  // namespace roce
