// Binding resolution (device/netdev.h) over synthetic interface tables, and once against the
// real one for the loopback block of this suite.
#include "device/netdev.h"

#include <arpa/inet.h>
#include <net/if.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "result_checks.h"

using vroce::device::InterfaceAddress;
using vroce::device::InterfaceTable;

namespace {

using roce::test::failure_of;

InterfaceAddress row(const char* netdev, int ifindex, unsigned int flags, const char* addr,
                     const char* mask) {
  InterfaceAddress r;
  r.netdev = netdev;
  r.ifindex = ifindex;
  r.flags = flags;
  int family = std::strchr(addr, ':') != nullptr ? AF_INET6 : AF_INET;
  void* a = family == AF_INET
                ? static_cast<void*>(&reinterpret_cast<sockaddr_in*>(&r.address)->sin_addr)
                : static_cast<void*>(&reinterpret_cast<sockaddr_in6*>(&r.address)->sin6_addr);
  void* m = family == AF_INET
                ? static_cast<void*>(&reinterpret_cast<sockaddr_in*>(&r.netmask)->sin_addr)
                : static_cast<void*>(&reinterpret_cast<sockaddr_in6*>(&r.netmask)->sin6_addr);
  REQUIRE(inet_pton(family, addr, a) == 1);
  REQUIRE(inet_pton(family, mask, m) == 1);
  r.address.ss_family = static_cast<sa_family_t>(family);
  r.netmask.ss_family = static_cast<sa_family_t>(family);
  return r;
}

InterfaceAddress link(const char* netdev, int ifindex, vroce::device::MacAddress mac) {
  InterfaceAddress r;
  r.netdev = netdev;
  r.ifindex = ifindex;
  r.address.ss_family = AF_PACKET;
  r.mac = mac;
  return r;
}

InterfaceTable sample_table() {
  const vroce::device::MacAddress veth_mac{0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
  return {
      link("lo", 1, {}),
      row("lo", 1, IFF_UP | IFF_LOOPBACK, "127.0.0.1", "255.0.0.0"),
      row("lo", 1, IFF_UP | IFF_LOOPBACK, "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
      link("veth0", 5, veth_mac),
      row("veth0", 5, IFF_UP, "10.77.1.1", "255.255.255.0"),
      row("veth0", 5, IFF_UP, "10.77.9.1", "255.255.255.0"),
      row("veth0", 5, IFF_UP, "fd77::1", "ffff:ffff:ffff:ffff::"),
      row("veth0", 5, IFF_UP, "fe80::80b:cff:fe0d:e0f", "ffff:ffff:ffff:ffff::"),
      link("v6only", 6, {}),
      row("v6only", 6, IFF_UP, "fd78::1", "ffff:ffff:ffff:ffff::"),
  };
}

}  // namespace

TEST_CASE("127.0.x.y belongs to lo through its 127/8 prefix", "[netdev]") {
  auto binding = vroce::device::resolve_binding("127.0.2.77", sample_table());
  REQUIRE(binding);
  CHECK(binding->netdev == "lo");
  CHECK(binding->ifindex == 1);
  CHECK(binding->loopback);
  CHECK(binding->address_text == "127.0.2.77");
  CHECK(vroce::device::is_zero_mac(binding->mac));
}

TEST_CASE("a literal address binds to the netdev that owns it", "[netdev]") {
  auto v4 = vroce::device::resolve_binding("10.77.9.1", sample_table());
  REQUIRE(v4);
  CHECK(v4->netdev == "veth0");
  CHECK(v4->ifindex == 5);
  CHECK_FALSE(v4->loopback);
  CHECK(v4->mac == vroce::device::MacAddress{0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f});

  auto v6 = vroce::device::resolve_binding("fd77::1", sample_table());
  REQUIRE(v6);
  CHECK(v6->netdev == "veth0");
  CHECK(v6->address.ss_family == AF_INET6);

  // A non-loopback netdev owns only its exact addresses, not its whole subnet.
  const std::string error = failure_of(vroce::device::resolve_binding("10.77.1.2", sample_table()));
  CHECK(error.find("no netdev in this network namespace owns 10.77.1.2") != std::string::npos);
  CHECK(error.find("ip addr add") != std::string::npos);
}

TEST_CASE("link-local IPv6 needs the netdev as scope", "[netdev]") {
  CHECK(failure_of(vroce::device::resolve_binding("fe80::80b:cff:fe0d:e0f", sample_table()))
            .find("needs its netdev as a scope") != std::string::npos);
  auto scoped = vroce::device::resolve_binding("fe80::80b:cff:fe0d:e0f%veth0", sample_table());
  REQUIRE(scoped);
  CHECK(scoped->netdev == "veth0");
  CHECK(reinterpret_cast<const sockaddr_in6*>(&scoped->address)->sin6_scope_id == 5);
  CHECK_FALSE(vroce::device::resolve_binding("fe80::80b:cff:fe0d:e0f%lo", sample_table()));
}

TEST_CASE("a netdev name binds to its first IPv4 address", "[netdev]") {
  auto binding = vroce::device::resolve_binding("veth0", sample_table());
  REQUIRE(binding);
  CHECK(binding->address_text == "10.77.1.1");
  CHECK(binding->netdev == "veth0");

  CHECK(failure_of(vroce::device::resolve_binding("v6only", sample_table()))
            .find("netdev v6only has no IPv4 address") != std::string::npos);
  CHECK(failure_of(vroce::device::resolve_binding("eth9", sample_table()))
            .find("neither an IPv4/IPv6 address nor a netdev") != std::string::npos);
}

TEST_CASE("the real interface table: this suite's loopback block is on lo", "[netdev]") {
  vroce::device::InterfaceTable table = vroce::device::read_interface_table();
  auto binding = vroce::device::resolve_binding("127.0.2.1", table);
  REQUIRE(binding);
  CHECK(binding->loopback);
  CHECK(binding->ifindex == static_cast<int>(if_nametoindex(binding->netdev.c_str())));
  auto mtu = vroce::device::read_netdev_mtu(binding->netdev);
  REQUIRE(mtu);
  CHECK(*mtu >= 1500);
  CHECK(failure_of(vroce::device::read_netdev_mtu("vp-nonexistent"))
            .find("cannot read the MTU of netdev vp-nonexistent") != std::string::npos);
}
