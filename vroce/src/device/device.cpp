// The Device class: one emulated device built from its spec (the registry of all of them is
// abi/device_registry.cpp).
#include "device/device.h"

#include <endian.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "device/async_events.h"
#include "device/context.h"
#include "device/device_netns.h"
#include "device/limits.h"
#include "device/netdev.h"
#include "device/port_rules.h"
#include "util/log.h"
#include "util/sysfs_path.h"

namespace vroce::device {
namespace {

// The ops every vroce device's VerbsDevice names: "vroce", and no kernel ABI range (there is no
// kernel device to match). No provider library holds this address, so none takes a vroce device
// for its own.
constexpr VerbsDeviceOps kVerbsDeviceOps{"vroce", 0, 0};

void copy_string(char* target, size_t size, const std::string& value) {
  std::snprintf(target, size, "%s", value.c_str());
}

}  // namespace

Result<std::unique_ptr<Device>> Device::create(const DeviceSpec& spec, int index,
                                               uint32_t port_gbps,
                                               const std::vector<InterfaceAddress>& table) {
  if (!port_speed_for_gbps(port_gbps)) {
    return failure("port speed " + std::to_string(port_gbps) +
                   " Gb/s is not one of 100, 200, 400 or 800 (VROCE_PORT_GBPS)");
  }
  Result<Binding> binding = resolve_binding(spec.address_or_netdev, table);
  if (!binding) {
    return failure(binding.error());
  }
  Result<uint32_t> mtu = read_netdev_mtu(binding->netdev);
  if (!mtu) {
    return failure(mtu.error());
  }
  if (!active_mtu_for_netdev_mtu(*mtu)) {
    return failure("netdev " + binding->netdev + " has MTU " + std::to_string(*mtu) +
                   ", below the 352 bytes a 256-byte RoCE payload needs; raise it (ip link set " +
                   binding->netdev + " mtu 1500)");
  }

  std::unique_ptr<Device> device(new Device);
  device->name_ = spec.name;
  device->index_ = index;
  device->pci_slot_ = index;
  device->netdev_ = binding->netdev;
  device->ifindex_ = binding->ifindex;
  device->address_ = binding->address;
  device->mac_ =
      is_zero_mac(binding->mac) ? derive_local_mac(spec.name, binding->address_text) : binding->mac;
  device->port_speed_gbps_ = port_gbps;
  device->netdev_mtu_.store(*mtu);
  device->node_guid_ = guid_from_mac(device->mac_);
  device->device_attr_ = make_device_attr(device->node_guid_);
  if (const auto& shared = config().sys_image_guid) {
    device->device_attr_.sys_image_guid = htobe64(*shared);  // functions of one adapter
  }
  device->gids_ = build_gid_table(device->address_, device->mac_, device->ifindex_,
                                  static_cast<size_t>(limits::kGidTableLength));

  device->verbs_device_.ops = &kVerbsDeviceOps;
  // _ops stay NULL, as rdma-core leaves them: a non-NULL alloc_context there would mark the
  // device as a pre-verbs_device one (verbs_get_device would then refuse it).
  ibv_device& dev = device->verbs_device_.device;
  dev.node_type = IBV_NODE_CA;
  dev.transport_type = IBV_TRANSPORT_IB;  // what every RoCE device reports
  std::string sysfs = sysfs_mount_path();
  std::string uverbs = "uverbs" + std::to_string(index);
  copy_string(dev.name, sizeof(dev.name), spec.name);
  copy_string(dev.dev_name, sizeof(dev.dev_name), uverbs);
  copy_string(dev.dev_path, sizeof(dev.dev_path), sysfs + "/class/infiniband_verbs/" + uverbs);
  copy_string(dev.ibdev_path, sizeof(dev.ibdev_path), sysfs + "/class/infiniband/" + spec.name);
  return Result<std::unique_ptr<Device>>(std::move(device));
}

Device::~Device() = default;

ibv_device* Device::ibv() noexcept {
  return &verbs_device_.device;
}
const std::string& Device::name() const noexcept {
  return name_;
}
uint64_t Device::node_guid() const noexcept {
  return node_guid_;
}
const sockaddr_storage& Device::address() const noexcept {
  return address_;
}
const std::string& Device::netdev() const noexcept {
  return netdev_;
}
int Device::ifindex() const noexcept {
  return ifindex_;
}
uint32_t Device::netdev_mtu() const noexcept {
  return netdev_mtu_.load();
}
const ibv_device_attr& Device::device_attr() const noexcept {
  return device_attr_;
}
std::span<const GidEntry> Device::gids() const noexcept {
  return gids_;
}
int Device::index() const noexcept {
  return index_;
}
int Device::pci_slot() const noexcept {
  return pci_slot_;
}
int Device::pci_function() const noexcept {
  return pci_function_;
}
void Device::place_on_pci_device(int slot, int function,
                                 std::optional<uint64_t> sys_image_guid_be) {
  pci_slot_ = slot;
  pci_function_ = function;
  if (sys_image_guid_be) {
    device_attr_.sys_image_guid = *sys_image_guid_be;
  }
}
uint32_t Device::port_speed_gbps() const noexcept {
  return port_speed_gbps_;
}
const std::array<uint8_t, 6>& Device::mac() const noexcept {
  return mac_;
}
ibv_port_state Device::port_state() const noexcept {
  return port_state_.load();
}

ibv_mtu Device::active_mtu() const noexcept {
  // An MTU shrunk below what RoCE can use after the device was created still reports the
  // smallest IB MTU; create() refuses such a netdev up front.
  return active_mtu_for_netdev_mtu(netdev_mtu()).value_or(IBV_MTU_256);
}

ibv_port_attr Device::port_attr() const noexcept {
  std::optional<PortSpeed> speed = port_speed_for_gbps(port_speed_gbps_);
  return make_port_attr(port_state(), active_mtu(), *speed);
}

void Device::refresh_netdev_mtu() noexcept {
  try {
    const InDeviceNetns in_netns;  // the netdev is in the devices' namespace
    if (!in_netns.ok()) {
      return;
    }
    Result<uint32_t> mtu = read_netdev_mtu(netdev_);
    if (mtu) {
      netdev_mtu_.store(*mtu);
    }
  } catch (...) {
    // Out of memory while building an error text: keep the last MTU.
  }
}

void Device::attach_context(Context* ctx) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  contexts_.push_back(ctx);
}

void Device::detach_context(Context* ctx) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  std::erase(contexts_, ctx);
}

int Device::raise_port_event(ibv_event_type type) {
  if (type == IBV_EVENT_PORT_ERR) {
    port_state_.store(IBV_PORT_DOWN);
  } else if (type == IBV_EVENT_PORT_ACTIVE) {
    port_state_.store(IBV_PORT_ACTIVE);
  }
  // The lock keeps a context from being closed (and its queue freed) while the event is queued.
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  for (Context* ctx : contexts_) {
    ibv_async_event event{};
    event.event_type = type;
    event.element.port_num = limits::kPortNum;
    raise_async_event(*ctx, event);
  }
  return static_cast<int>(contexts_.size());
}

}  // namespace vroce::device
