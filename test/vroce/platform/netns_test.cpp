// Devices bound to a veth inside a network namespace. Hidden ([.netns]): veth_netns_test.py
// runs these inside the namespace it built, with VROCE_DEVICES and the expected facts in the
// environment (VP_NETNS_DEVICE, VP_NETNS_NETDEV, VP_NETNS_ADDRESS, VP_NETNS_MAC).
#include <arpa/inet.h>
#include <net/if.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "abi/private_decls.h"
#include "device/netdev.h"
#include "device/port_rules.h"

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  REQUIRE(value != nullptr);
  return value;
}

vroce::device::MacAddress parse_mac(const std::string& text) {
  vroce::device::MacAddress mac{};
  unsigned int b[6];
  REQUIRE(std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4],
                      &b[5]) == 6);
  for (int i = 0; i < 6; ++i) {
    mac[static_cast<size_t>(i)] = static_cast<uint8_t>(b[i]);
  }
  return mac;
}

ibv_gid expected_gid(const std::string& address) {
  ibv_gid gid{};
  if (inet_pton(AF_INET, address.c_str(), gid.raw + 12) == 1) {
    gid.raw[10] = 0xff;
    gid.raw[11] = 0xff;
  } else {
    REQUIRE(inet_pton(AF_INET6, address.c_str(), gid.raw) == 1);
  }
  return gid;
}

ibv_context* open_named(const std::string& name, ibv_device*** list) {
  int count = 0;
  *list = ibv_get_device_list(&count);
  REQUIRE(*list != nullptr);
  for (int i = 0; i < count; ++i) {
    if (name == ibv_get_device_name((*list)[i])) {
      return ibv_open_device((*list)[i]);
    }
  }
  FAIL("device " << name << " not listed");
  return nullptr;
}

void set_mtu(const std::string& netdev, int mtu) {
  std::string command = "ip link set dev " + netdev + " mtu " + std::to_string(mtu);
  REQUIRE(std::system(command.c_str()) == 0);
}

}  // namespace

TEST_CASE("a device bound in a namespace reports its netdev's identity", "[.netns]") {
  std::string name = env("VP_NETNS_DEVICE");
  std::string netdev = env("VP_NETNS_NETDEV");
  vroce::device::MacAddress mac = parse_mac(env("VP_NETNS_MAC"));
  ibv_device** list = nullptr;
  ibv_context* ctx = open_named(name, &list);
  REQUIRE(ctx != nullptr);
  int ifindex = static_cast<int>(if_nametoindex(netdev.c_str()));
  REQUIRE(ifindex > 0);

  ibv_gid_entry entry{};
  REQUIRE(ibv_query_gid_ex(ctx, 1, 3, &entry, 0) == 0);
  CHECK(entry.ndev_ifindex == static_cast<uint32_t>(ifindex));
  CHECK(entry.gid_type == IBV_GID_TYPE_ROCE_V2);
  ibv_gid own = expected_gid(env("VP_NETNS_ADDRESS"));
  CHECK(std::memcmp(entry.gid.raw, own.raw, 16) == 0);

  // GUID from the veth's real MAC, and the default GID at 0/1 is fe80::<EUI-64 of that MAC>;
  // every entry names the veth.
  CHECK(ibv_get_device_guid(ctx->device) == vroce::device::guid_from_mac(mac));
  REQUIRE(ibv_query_gid_ex(ctx, 1, 1, &entry, 0) == 0);
  ibv_gid link_local = vroce::device::link_local_gid(mac);
  CHECK(std::memcmp(entry.gid.raw, link_local.raw, 16) == 0);
  CHECK(entry.gid_type == IBV_GID_TYPE_ROCE_V2);
  CHECK(entry.ndev_ifindex == static_cast<uint32_t>(ifindex));
  ibv_close_device(ctx);
  ibv_free_device_list(list);
}

TEST_CASE("the port follows the netdev's MTU as it changes", "[.netns]") {
  std::string netdev = env("VP_NETNS_NETDEV");
  ibv_device** list = nullptr;
  ibv_context* ctx = open_named(env("VP_NETNS_DEVICE"), &list);
  REQUIRE(ctx != nullptr);
  auto original = vroce::device::read_netdev_mtu(netdev);
  REQUIRE(original);

  struct Case {
    int mtu;
    ibv_mtu expected;
  };
  for (Case c : {Case{9000, IBV_MTU_4096}, Case{2200, IBV_MTU_2048}, Case{1500, IBV_MTU_1024},
                 Case{600, IBV_MTU_256}}) {
    INFO("netdev MTU " << c.mtu);
    set_mtu(netdev, c.mtu);
    ibv_port_attr attr{};
    REQUIRE(ibv_query_port(ctx, 1, &attr) == 0);
    CHECK(attr.active_mtu == c.expected);
    CHECK(attr.max_mtu == IBV_MTU_4096);
  }
  set_mtu(netdev, static_cast<int>(*original));
  ibv_close_device(ctx);
  ibv_free_device_list(list);
}
