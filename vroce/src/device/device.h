// An emulated RoCE NIC as the rest of vroce sees it: its identity, its one Ethernet port, the IP
// address it owns and its mlx5-style GID table. Devices are created once per process from
// config().devices (abi/device_registry.h) and live until exit.
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/result.h"

namespace vroce::device {

struct Context;
struct InterfaceAddress;  // device/netdev.h

struct GidEntry {
  ibv_gid gid{};
  ibv_gid_type type = IBV_GID_TYPE_ROCE_V2;  // IBV_GID_TYPE_ROCE_V1 or _V2
  bool valid = false;
  int ndev_ifindex = 0;
};

// rdma-core's struct verbs_device (libibverbs' private driver.h), as far as anyone outside
// libibverbs reads it: every ibv_device rdma-core hands out is the first member of one, and the
// pointer right behind it names the provider that owns the device. Provider libraries check it
// before they touch a device as theirs: libmlx5's mlx5dv_is_supported, which NCCL calls on every
// device, compares it with its own ops. vroce's points at vroce's own ops, so the answer is a
// clean "not mine" rather than a read of whatever vroce kept there.
struct VerbsDeviceOps {  // the head of rdma-core's struct verbs_device_ops
  const char* name;
  uint32_t match_min_abi_version;
  uint32_t match_max_abi_version;
};
struct VerbsDevice {
  ibv_device device;  // must be first
  const VerbsDeviceOps* ops;
};
static_assert(offsetof(VerbsDevice, ops) == sizeof(ibv_device));

class Device {
 public:
  // Builds the device a spec names: resolves its binding against the interface table, reads
  // the netdev's MTU and MAC, lays out the GID table. Fails saying why and how to fix it when
  // the binding resolves to nothing usable. index is its place in the device list.
  static Result<std::unique_ptr<Device>> create(const DeviceSpec& spec, int index,
                                                uint32_t port_gbps,
                                                const std::vector<InterfaceAddress>& table);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The public struct handed out by ibv_get_device_list.
  ibv_device* ibv() noexcept;

  const std::string& name() const noexcept;
  uint64_t node_guid() const noexcept;  // EUI-64 derived from the netdev MAC (network order)

  // The address this device sends from and receives on (UDP 4791), and its netdev.
  const sockaddr_storage& address() const noexcept;
  const std::string& netdev() const noexcept;
  int ifindex() const noexcept;
  uint32_t netdev_mtu() const noexcept;  // read at open time
  ibv_mtu active_mtu() const noexcept;   // the kernel rule: mtu - 96 >= 4096 ? 4096 : ...

  const ibv_device_attr& device_attr() const noexcept;
  ibv_port_attr port_attr() const noexcept;  // port 1, fully filled (52 bytes)
  std::span<const GidEntry> gids() const noexcept;

  int index() const noexcept;  // position in the device list
  // Where the fake sysfs puts the device: the bus of device pci_slot() (fake_pci_address), and
  // its function. A device alone is its own slot, function 0.
  int pci_slot() const noexcept;
  int pci_function() const noexcept;
  // Makes this device function `function` of the PCI device of device `slot` (an adapter with
  // one PCI function per port, VROCE_PCI_FUNCTIONS); with sys_image_guid_be, the adapter's
  // GUID that every function reports. Called while the device list is built, before any use.
  void place_on_pci_device(int slot, int function, std::optional<uint64_t> sys_image_guid_be);
  uint32_t port_speed_gbps() const noexcept;
  const std::array<uint8_t, 6>& mac() const noexcept;  // the netdev's, or derived for lo

  // Re-reads the netdev MTU (a NIC follows its netdev's MTU changes); called by
  // ibv_open_device and ibv_query_port. Keeps the last value if the netdev is gone.
  void refresh_netdev_mtu() noexcept;

  // Port state as port_attr() reports it. PORT_ERR/PORT_ACTIVE injected by tests move it.
  ibv_port_state port_state() const noexcept;

  // Open contexts of this device, for events that concern every user of the port.
  void attach_context(Context* ctx);
  void detach_context(Context* ctx);

  // Delivers a port-level (or device-fatal) event to every open context, after updating the
  // port state it implies (PORT_ERR -> DOWN, PORT_ACTIVE -> ACTIVE). Returns the number of
  // contexts that received it.
  int raise_port_event(ibv_event_type type);

 private:
  Device() = default;

  VerbsDevice verbs_device_{};
  std::string name_;
  int index_ = 0;
  int pci_slot_ = 0;
  int pci_function_ = 0;
  std::string netdev_;
  int ifindex_ = 0;
  sockaddr_storage address_{};
  std::array<uint8_t, 6> mac_{};
  uint32_t port_speed_gbps_ = 0;
  std::atomic<uint32_t> netdev_mtu_{0};
  std::atomic<ibv_port_state> port_state_{IBV_PORT_ACTIVE};
  uint64_t node_guid_ = 0;
  ibv_device_attr device_attr_{};
  std::vector<GidEntry> gids_;
  std::mutex contexts_mutex_;
  std::vector<Context*> contexts_;
};

}  // namespace vroce::device
