// An emulated RoCE NIC as the rest of vroce sees it: its identity, its one Ethernet port, the IP
// address it owns and its mlx5-style GID table. Devices are created once per process from
// config().devices and live until exit.
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vroce {

struct GidEntry {
  ibv_gid gid{};
  ibv_gid_type type = IBV_GID_TYPE_ROCE_V2;  // IBV_GID_TYPE_ROCE_V1 or _V2
  bool valid = false;
  int ndev_ifindex = 0;
};

class Device {
 public:
  // The public struct handed out by ibv_get_device_list.
  ibv_device* ibv() noexcept;

  const std::string& name() const noexcept;
  uint64_t node_guid() const noexcept;         // EUI-64 derived from the netdev MAC (network order)

  // The address this device sends from and receives on (UDP 4791), and its netdev.
  const sockaddr_storage& address() const noexcept;
  const std::string& netdev() const noexcept;
  int ifindex() const noexcept;
  uint32_t netdev_mtu() const noexcept;        // read at open time
  ibv_mtu active_mtu() const noexcept;         // the kernel rule: mtu - 96 >= 4096 ? 4096 : ...

  const ibv_device_attr& device_attr() const noexcept;
  ibv_port_attr port_attr() const noexcept;    // port 1, fully filled (52 bytes)
  std::span<const GidEntry> gids() const noexcept;
};

// All devices of this process, in config order.
std::span<Device* const> devices();

// The Device behind a public ibv_device pointer, or nullptr for a pointer we did not hand out.
Device* device_from_ibv(ibv_device* dev) noexcept;

}  // namespace vroce
