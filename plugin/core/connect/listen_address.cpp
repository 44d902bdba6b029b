// The handshake listener's address: see listen_address.h.
#include "core/connect/listen_address.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

namespace roce {
namespace {

bool link_local_v6(const BindAddress& a) {
  return a.family == AddressFamily::Ipv6 && a.bytes[0] == 0xfe && (a.bytes[1] & 0xc0) == 0x80;
}

// The first usable address of `name`: the GID's family first.
std::optional<BindAddress> address_of(const std::vector<InterfaceAddress>& interfaces,
                                      const std::string& name, AddressFamily preferred) {
  std::optional<BindAddress> other;
  for (const InterfaceAddress& ia : interfaces) {
    if (ia.interface != name || link_local_v6(ia.address)) {
      continue;
    }
    if (ia.address.family == preferred) {
      return ia.address;
    }
    if (!other) {
      other = ia.address;
    }
  }
  return other;
}

std::string interface_list(const std::vector<InterfaceAddress>& interfaces) {
  std::string out;
  std::string last;
  for (const InterfaceAddress& ia : interfaces) {
    if (ia.interface == last) {
      continue;
    }
    last = ia.interface;
    out += (out.empty() ? "" : ", ") + ia.interface;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string address_text(const BindAddress& address) {
  char text[INET6_ADDRSTRLEN] = {};
  const int af = address.family == AddressFamily::Ipv4 ? AF_INET : AF_INET6;
  if (inet_ntop(af, address.bytes.data(), text, sizeof(text)) == nullptr) {
    return "?";
  }
  return text;
}

Result<ListenAddressChoice> choose_listen_address(const ListenAddressInputs& in) {
  const std::string gid_text = address_text(in.gid_address);
  if (in.gid_address_is_local) {
    return ListenAddressChoice{in.gid_address, "the address of the device's GID"};
  }
  const std::string absent = fmt::format(
      "the device's GID address {} is not an address of this network namespace (a pod sharing "
      "the host's RDMA device?)",
      gid_text);
  if (in.socket_ifname != nullptr) {
    for (const InterfaceAddress& ia : in.interfaces) {
      if (!in.socket_ifname->matches_name(ia.interface)) {
        continue;
      }
      if (auto a = address_of(in.interfaces, ia.interface, in.gid_address.family)) {
        return ListenAddressChoice{*a, fmt::format("{}; NCCL_SOCKET_IFNAME={} selects {}", absent,
                                                   in.socket_ifname_text, ia.interface)};
      }
    }
    return failure(fmt::format(
        "{}, and NCCL_SOCKET_IFNAME={} selects no interface with an address here (interfaces "
        "up: {}); set NCCL_SOCKET_IFNAME to the interface the peers reach this node on",
        absent, in.socket_ifname_text, interface_list(in.interfaces)));
  }
  if (in.default_interface) {
    if (auto a = address_of(in.interfaces, *in.default_interface, in.gid_address.family)) {
      return ListenAddressChoice{
          *a, fmt::format("{}; NCCL_SOCKET_IFNAME is unset and the default route is on {}", absent,
                          *in.default_interface)};
    }
    return failure(fmt::format(
        "{}, NCCL_SOCKET_IFNAME is unset and the default route's interface {} has no usable "
        "address; set NCCL_SOCKET_IFNAME to the interface the peers reach this node on",
        absent, *in.default_interface));
  }
  return failure(fmt::format(
      "{}, NCCL_SOCKET_IFNAME is unset and there is no default route (interfaces up: {}); set "
      "NCCL_SOCKET_IFNAME to the interface the peers reach this node on",
      absent, interface_list(in.interfaces)));
}

bool address_is_local(const BindAddress& address) {
  const int af = address.family == AddressFamily::Ipv4 ? AF_INET : AF_INET6;
  const int fd = ::socket(af, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return true;  // the listener will fail with the reason
  }
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (af == AF_INET) {
    auto& in = reinterpret_cast<sockaddr_in&>(storage);
    in.sin_family = AF_INET;
    std::memcpy(&in.sin_addr, address.bytes.data(), 4);
    length = sizeof(in);
  } else {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(storage);
    in6.sin6_family = AF_INET6;
    std::memcpy(&in6.sin6_addr, address.bytes.data(), 16);
    length = sizeof(in6);
  }
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&storage), length);
  const int err = errno;
  ::close(fd);
  return rc == 0 || err != EADDRNOTAVAIL;
}

std::vector<InterfaceAddress> namespace_interface_addresses() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return out;
  }
  for (const ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || (it->ifa_flags & IFF_UP) == 0) {
      continue;
    }
    InterfaceAddress ia;
    ia.interface = it->ifa_name;
    if (it->ifa_addr->sa_family == AF_INET) {
      ia.address.family = AddressFamily::Ipv4;
      std::memcpy(ia.address.bytes.data(),
                  &reinterpret_cast<const sockaddr_in*>(it->ifa_addr)->sin_addr, 4);
    } else if (it->ifa_addr->sa_family == AF_INET6) {
      ia.address.family = AddressFamily::Ipv6;
      std::memcpy(ia.address.bytes.data(),
                  &reinterpret_cast<const sockaddr_in6*>(it->ifa_addr)->sin6_addr, 16);
    } else {
      continue;
    }
    out.push_back(std::move(ia));
  }
  freeifaddrs(list);
  return out;
}

std::optional<std::string> default_route_interface() {
  // /proc/net is the thread group leader's namespace; thread-self is this thread's.
  std::ifstream v4("/proc/thread-self/net/route");
  std::string line;
  std::optional<std::string> best;
  long best_metric = LONG_MAX;
  std::getline(v4, line);  // header
  while (std::getline(v4, line)) {
    std::istringstream fields(line);
    std::string iface, destination, gateway, flags, refcnt, use, metric, mask;
    if (!(fields >> iface >> destination >> gateway >> flags >> refcnt >> use >> metric >> mask)) {
      continue;
    }
    const long flag_bits = std::strtol(flags.c_str(), nullptr, 16);
    const long m = std::strtol(metric.c_str(), nullptr, 10);
    if (destination == "00000000" && mask == "00000000" && (flag_bits & 0x1) != 0 &&
        m < best_metric) {
      best = iface;
      best_metric = m;
    }
  }
  if (best) {
    return best;
  }
  std::ifstream v6("/proc/thread-self/net/ipv6_route");
  while (std::getline(v6, line)) {
    std::istringstream fields(line);
    std::string destination, prefix, source, source_prefix, next_hop, metric, refcnt, use, flags,
        iface;
    if (!(fields >> destination >> prefix >> source >> source_prefix >> next_hop >> metric >>
          refcnt >> use >> flags >> iface)) {
      continue;
    }
    const long m = std::strtol(metric.c_str(), nullptr, 16);
    if (destination == std::string(32, '0') && prefix == "00" && iface != "lo" && m < best_metric) {
      best = iface;
      best_metric = m;
    }
  }
  return best;
}

}  // namespace roce
