// Where the handshake listener binds. Normally the address of the device's GID, so connection
// setup follows the RoCE interface. In a Kubernetes pod that shares the host's RDMA device (rdma
// "shared" netns mode) the GID table holds the host's addresses, which are not addresses of the
// pod's network namespace; there, as NCCL's IB transport does, the listener binds the
// NCCL_SOCKET_IFNAME interface's address, else the default route's interface's. The handshake
// carries the GIDs either way, so the RoCE traffic is unchanged.
//
// The choice is pure (unit-tested); the helpers below read the calling thread's namespace.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/connect/handshake_checks.h"
#include "core/device/hca_filter.h"
#include "roce/result.h"

namespace roce {

struct InterfaceAddress {
  std::string interface;  // "eth0"
  BindAddress address;
};

struct ListenAddressChoice {
  BindAddress address;
  std::string why;  // for the INFO line: which address and why
};

struct ListenAddressInputs {
  BindAddress gid_address;
  bool gid_address_is_local = true;              // bindable in this namespace
  std::vector<InterfaceAddress> interfaces;      // this namespace's addresses, in kernel order
  const HcaFilter* socket_ifname = nullptr;      // NCCL_SOCKET_IFNAME; nullptr: unset
  std::string socket_ifname_text;                // its value, for messages
  std::optional<std::string> default_interface;  // the default route's interface
};

// The GID's address when it is local; otherwise the first address (the GID's family first, IPv6
// link-local skipped) of the first interface NCCL_SOCKET_IFNAME selects, else of the default
// route's interface. Fails naming the cause and the fix when none applies.
Result<ListenAddressChoice> choose_listen_address(const ListenAddressInputs& in);

// "10.0.0.1" or "fd00::1", without a port.
std::string address_text(const BindAddress& address);

// True when `address` can be bound in the calling thread's network namespace (a UDP bind to
// port 0; EADDRNOTAVAIL means it is not an address here). Other bind errors count as local, so
// the listener reports them itself.
bool address_is_local(const BindAddress& address);

// The calling thread's namespace's interface addresses (getifaddrs; interfaces that are up).
std::vector<InterfaceAddress> namespace_interface_addresses();

// The interface of the calling thread's namespace's IPv4 default route with the lowest metric
// (/proc/thread-self/net/route), else of its IPv6 default route; std::nullopt when neither.
std::optional<std::string> default_route_interface();

}  // namespace roce
