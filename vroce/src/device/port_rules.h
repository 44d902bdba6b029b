// The rules that turn a device's facts (netdev MTU, MAC, bound address, configured speed) into
// what verbs reports: active MTU, speed and width, GUIDs, the mlx5-style GID table, and the
// port and device attribute structs. Pure functions of their inputs, so every rule is
// unit-tested without a network.
#pragma once

#include <infiniband/verbs.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "device/device.h"

namespace vroce::device {

using MacAddress = std::array<uint8_t, 6>;

// The kernel's rule for RoCE (iboe_get_mtu): the netdev MTU less 96 bytes of RoCE headers (GRH,
// UDP, BTH, the largest extended header, ICRC), rounded down to an IB MTU. nullopt below 352
// bytes, where not even a 256-byte payload fits.
std::optional<ibv_mtu> active_mtu_for_netdev_mtu(uint32_t netdev_mtu);

// Bytes of an IB MTU enum value (IBV_MTU_1024 -> 1024); 0 for an invalid value.
uint32_t ibv_mtu_bytes(ibv_mtu mtu);

// A port speed as IB reports it: active_width and active_speed codes whose product is the
// configured rate, as a ConnectX port negotiates them.
struct PortSpeed {
  uint8_t active_width;  // IB width code: 1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X
  uint8_t active_speed;  // IB speed code: 32 = EDR (25G lane), 64 = HDR (50G), 128 = NDR (100G)
  uint32_t lanes;
  uint32_t lane_gbps;
  const char* speed_name;  // "EDR", "HDR", "NDR": as sysfs ports/1/rate prints it
};

// 100 -> 4X EDR, 200 -> 4X HDR, 400 -> 4X NDR, 800 -> 8X NDR; nullopt for anything else.
std::optional<PortSpeed> port_speed_for_gbps(uint32_t gbps);

// A stable, locally administered unicast MAC for a netdev that has none (lo): a hash of the
// device name and its address, so two vroce devices on lo get distinct GUIDs and link-local GIDs
// and a device keeps its identity across runs.
MacAddress derive_local_mac(std::string_view device_name, std::string_view address_text);

// True for an all-zero MAC (lo, tun): such a netdev needs derive_local_mac().
bool is_zero_mac(const MacAddress& mac);

// Modified EUI-64 of a MAC (the universal/local bit flipped, ff:fe in the middle), as the eight
// bytes of a GUID in wire order.
std::array<uint8_t, 8> eui64_from_mac(const MacAddress& mac);

// The EUI-64 as a __be64 value, as ibv_device_attr.node_guid holds it.
uint64_t guid_from_mac(const MacAddress& mac);

// fe80::<EUI-64>, the default GID at index 0/1 of a ConnectX RoCE port (build_gid_table).
ibv_gid link_local_gid(const MacAddress& mac);

// ::ffff:a.b.c.d for IPv4, the address itself for IPv6.
ibv_gid gid_from_address(const sockaddr_storage& address);

// The port's GID table, laid out as a ConnectX's: the default GID fe80::<EUI-64 of mac> as a
// v1/v2 pair at 0/1, then the bound address as a pair at 2/3 (IPv4-mapped for IPv4, so
// RoCEv2-over-IPv4 sits at index 3). A bound address equal to the default GID is listed once,
// at 0/1. The rest is empty. vroce sends only from its bound address: RTR refuses the
// link-local pair as a source GID (check_av) unless it is that address.
std::vector<GidEntry> build_gid_table(const sockaddr_storage& bound, const MacAddress& mac,
                                      int ifindex, size_t table_length);

// Port 1's attributes for a device in the given state.
ibv_port_attr make_port_attr(ibv_port_state state, ibv_mtu active_mtu, const PortSpeed& speed);

// The device attributes: limits from device/limits.h and the GUID.
ibv_device_attr make_device_attr(uint64_t node_guid_be);

}  // namespace vroce::device
