// Netdev discovery; see netdev.h.
#include "device/netdev.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vroce::device {
namespace {

std::string base_name(const char* label) {
  std::string name(label);
  size_t colon = name.find(':');  // "eth0:1" is an IPv4 alias label of eth0
  return colon == std::string::npos ? name : name.substr(0, colon);
}

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) {
    return false;
  }
  if (a.ss_family == AF_INET) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in*>(&a)->sin_addr,
                       &reinterpret_cast<const sockaddr_in*>(&b)->sin_addr, 4) == 0;
  }
  if (a.ss_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(&b)->sin6_addr, 16) == 0;
  }
  return false;
}

const uint8_t* address_bytes(const sockaddr_storage& address, size_t* length) {
  if (address.ss_family == AF_INET) {
    *length = 4;
    return reinterpret_cast<const uint8_t*>(
        &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr);
  }
  *length = 16;
  return reinterpret_cast<const uint8_t*>(
      &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr);
}

bool in_prefix(const sockaddr_storage& target, const sockaddr_storage& address,
               const sockaddr_storage& netmask) {
  if (target.ss_family != address.ss_family || netmask.ss_family != address.ss_family) {
    return false;
  }
  size_t length = 0;
  const uint8_t* t = address_bytes(target, &length);
  const uint8_t* a = address_bytes(address, &length);
  const uint8_t* m = address_bytes(netmask, &length);
  for (size_t i = 0; i < length; ++i) {
    if ((t[i] & m[i]) != (a[i] & m[i])) {
      return false;
    }
  }
  return true;
}

bool is_link_local_v6(const sockaddr_storage& address) {
  if (address.ss_family != AF_INET6) {
    return false;
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr;
  return v6.s6_addr[0] == 0xfe && (v6.s6_addr[1] & 0xc0) == 0x80;
}

// Parses "a.b.c.d", "x::y" or "fe80::1%veth0" into *address; *scope receives the part after '%'.
bool parse_literal(const std::string& text, sockaddr_storage* address, std::string* scope) {
  *address = {};
  std::string host = text;
  size_t percent = text.find('%');
  if (percent != std::string::npos) {
    host = text.substr(0, percent);
    *scope = text.substr(percent + 1);
  }
  auto* v4 = reinterpret_cast<sockaddr_in*>(address);
  if (percent == std::string::npos && inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(address);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    return true;
  }
  return false;
}

const InterfaceAddress* link_row(const InterfaceTable& table, const std::string& netdev) {
  for (const InterfaceAddress& row : table) {
    if (row.address.ss_family == AF_PACKET && row.netdev == netdev) {
      return &row;
    }
  }
  return nullptr;
}

Binding make_binding(const InterfaceTable& table, const InterfaceAddress& owner,
                     const sockaddr_storage& address) {
  Binding binding;
  binding.netdev = owner.netdev;
  binding.ifindex = owner.ifindex;
  binding.loopback = (owner.flags & IFF_LOOPBACK) != 0;
  binding.address = address;
  if (address.ss_family == AF_INET6 && is_link_local_v6(address)) {
    reinterpret_cast<sockaddr_in6*>(&binding.address)->sin6_scope_id =
        static_cast<uint32_t>(owner.ifindex);
  }
  binding.address_text = address_to_text(address);
  if (const InterfaceAddress* link = link_row(table, owner.netdev)) {
    binding.mac = link->mac;
  }
  return binding;
}

}  // namespace

std::string address_to_text(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, text,
              sizeof(text));
  } else if (address.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr, text,
              sizeof(text));
  }
  return text;
}

InterfaceTable read_interface_table() {
  InterfaceTable table;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return table;
  }
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_name == nullptr) {
      continue;
    }
    InterfaceAddress row;
    row.netdev = base_name(ifa->ifa_name);
    row.ifindex = static_cast<int>(if_nametoindex(row.netdev.c_str()));
    row.flags = ifa->ifa_flags;
    int family = ifa->ifa_addr->sa_family;
    if (family == AF_INET || family == AF_INET6) {
      size_t size = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      std::memcpy(&row.address, ifa->ifa_addr, size);
      if (ifa->ifa_netmask != nullptr) {
        std::memcpy(&row.netmask, ifa->ifa_netmask, size);
        row.netmask.ss_family = static_cast<sa_family_t>(family);
      }
    } else if (family == AF_PACKET) {
      const auto* link = reinterpret_cast<const sockaddr_ll*>(ifa->ifa_addr);
      row.address.ss_family = AF_PACKET;
      if (link->sll_halen == row.mac.size()) {
        std::memcpy(row.mac.data(), link->sll_addr, row.mac.size());
      }
    } else {
      continue;
    }
    table.push_back(row);
  }
  freeifaddrs(list);
  return table;
}

Result<Binding> resolve_binding(const std::string& binding, const InterfaceTable& table) {
  sockaddr_storage target{};
  std::string scope;
  if (parse_literal(binding, &target, &scope)) {
    std::string text = address_to_text(target);
    if (is_link_local_v6(target) && scope.empty()) {
      return failure("link-local address " + binding +
                     " needs its netdev as a scope (for example fe80::1%veth0)");
    }
    for (const InterfaceAddress& row : table) {
      if (same_address(row.address, target) && (scope.empty() || row.netdev == scope)) {
        return make_binding(table, row, target);
      }
    }
    for (const InterfaceAddress& row : table) {
      if ((row.flags & IFF_LOOPBACK) != 0 && in_prefix(target, row.address, row.netmask)) {
        return make_binding(table, row, target);
      }
    }
    return failure(
        "no netdev in this network namespace owns " + text + "; add it (ip addr add " + text +
        (target.ss_family == AF_INET ? "/24" : "/64") +
        " dev <netdev>), bring lo up for a 127.x address (ip link set lo up), or bind the "
        "device to an address listed by ip addr");
  }
  bool netdev_exists = false;
  for (const InterfaceAddress& row : table) {
    if (row.netdev != binding) {
      continue;
    }
    netdev_exists = true;
    if (row.address.ss_family == AF_INET) {
      return make_binding(table, row, row.address);
    }
  }
  if (netdev_exists) {
    return failure("netdev " + binding +
                   " has no IPv4 address; add one (ip addr add <a.b.c.d>/24 dev " + binding +
                   ") or bind the device to one of its IPv6 addresses literally");
  }
  return failure(binding +
                 " is neither an IPv4/IPv6 address nor a netdev of this network namespace (see ip "
                 "addr)");
}

Result<uint32_t> read_netdev_mtu(const std::string& netdev) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return failure(std::string("cannot open a socket to read the MTU of ") + netdev + ": " +
                   std::strerror(errno));
  }
  ifreq request{};
  std::strncpy(request.ifr_name, netdev.c_str(), IFNAMSIZ - 1);
  int rc = ioctl(fd, SIOCGIFMTU, &request);
  int saved = errno;
  close(fd);
  if (rc != 0) {
    return failure("cannot read the MTU of netdev " + netdev + ": " + std::strerror(saved));
  }
  return static_cast<uint32_t>(request.ifr_mtu);
}

}  // namespace vroce::device
