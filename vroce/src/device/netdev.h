// Finding the netdev behind a device binding ("127.0.0.11", "fd00::1", "veth0"): which interface
// owns the address, its ifindex, MAC and MTU. The matching rules are pure functions over a
// snapshot of the interface table so they are unit-tested without touching the host; the
// snapshot itself comes from getifaddrs().
#pragma once

#include <net/if.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device/port_rules.h"
#include "util/result.h"

namespace vroce::device {

// One row of the interface table: an address (or, for family AF_PACKET, the link address).
struct InterfaceAddress {
  std::string netdev;  // the netdev name, without an IPv4 alias label (":1")
  int ifindex = 0;
  unsigned int flags = 0;  // IFF_*
  sockaddr_storage address{};
  sockaddr_storage netmask{};
  MacAddress mac{};  // family AF_PACKET rows only
};

using InterfaceTable = std::vector<InterfaceAddress>;

// The interface table of the calling thread's network namespace.
InterfaceTable read_interface_table();

// What a binding resolved to.
struct Binding {
  std::string netdev;
  int ifindex = 0;
  bool loopback = false;
  sockaddr_storage address{};  // port 0; sin6_scope_id set for link-local IPv6
  std::string address_text;    // numeric form, without a scope suffix
  MacAddress mac{};            // all zero when the netdev has none
};

// Resolves a binding against a table. A literal address must belong to a netdev: equal to one
// of its addresses, or inside the prefix of an address on a loopback netdev (127.0.0.x on lo,
// as the kernel's local route makes all of 127/8 local). A netdev name resolves to that netdev's
// first IPv4 address. A failure says why and how to fix it.
Result<Binding> resolve_binding(const std::string& binding, const InterfaceTable& table);

// The current MTU of a netdev (ioctl SIOCGIFMTU), or why it cannot be read.
Result<uint32_t> read_netdev_mtu(const std::string& netdev);

// Numeric text of an address ("127.0.0.11", "fd00::1").
std::string address_to_text(const sockaddr_storage& address);

}  // namespace vroce::device
