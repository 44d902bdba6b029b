// The attribute rules of device/port_rules.h: active MTU, speed and width, GUIDs, the GID table.
#include "device/port_rules.h"

#include <arpa/inet.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "device/limits.h"

using vroce::device::MacAddress;

namespace {

sockaddr_storage address(const char* text) {
  sockaddr_storage storage{};
  if (inet_pton(AF_INET, text, &reinterpret_cast<sockaddr_in*>(&storage)->sin_addr) == 1) {
    storage.ss_family = AF_INET;
  } else {
    REQUIRE(inet_pton(AF_INET6, text, &reinterpret_cast<sockaddr_in6*>(&storage)->sin6_addr) == 1);
    storage.ss_family = AF_INET6;
  }
  return storage;
}

ibv_gid gid(std::initializer_list<uint8_t> bytes) {
  ibv_gid value{};
  REQUIRE(bytes.size() == 16);
  std::copy(bytes.begin(), bytes.end(), value.raw);
  return value;
}

bool same(const ibv_gid& a, const ibv_gid& b) {
  return std::memcmp(a.raw, b.raw, 16) == 0;
}

}  // namespace

TEST_CASE("active MTU follows the kernel's RoCE rule", "[port]") {
  struct Case {
    uint32_t netdev_mtu;
    ibv_mtu expected;
  };
  const Case cases[] = {
      {65536, IBV_MTU_4096},  // lo
      {9000, IBV_MTU_4096},  {4192, IBV_MTU_4096}, {4191, IBV_MTU_2048},
      {2144, IBV_MTU_2048},  {2143, IBV_MTU_1024}, {1500, IBV_MTU_1024},  // Ethernet default
      {1120, IBV_MTU_1024},  {1119, IBV_MTU_512},  {608, IBV_MTU_512},
      {607, IBV_MTU_256},    {352, IBV_MTU_256},
  };
  for (const Case& c : cases) {
    INFO("netdev MTU " << c.netdev_mtu);
    CHECK(vroce::device::active_mtu_for_netdev_mtu(c.netdev_mtu) == c.expected);
  }
  CHECK_FALSE(vroce::device::active_mtu_for_netdev_mtu(351));
  CHECK_FALSE(vroce::device::active_mtu_for_netdev_mtu(68));
  CHECK(vroce::device::ibv_mtu_bytes(IBV_MTU_1024) == 1024);
  CHECK(vroce::device::ibv_mtu_bytes(IBV_MTU_4096) == 4096);
}

TEST_CASE("port speeds are width x lane speed of a ConnectX port", "[port]") {
  struct Case {
    uint32_t gbps;
    uint8_t width;
    uint8_t speed;
  };
  // Width codes: 2 = 4X, 4 = 8X. Speed codes: 32 = EDR (25G), 64 = HDR (50G), 128 = NDR (100G).
  const Case cases[] = {{100, 2, 32}, {200, 2, 64}, {400, 2, 128}, {800, 4, 128}};
  for (const Case& c : cases) {
    INFO(c.gbps << " Gb/s");
    auto speed = vroce::device::port_speed_for_gbps(c.gbps);
    REQUIRE(speed);
    CHECK(speed->active_width == c.width);
    CHECK(speed->active_speed == c.speed);
    CHECK(speed->lanes * speed->lane_gbps == c.gbps);
  }
  CHECK_FALSE(vroce::device::port_speed_for_gbps(300));
  CHECK_FALSE(vroce::device::port_speed_for_gbps(0));
}

TEST_CASE("EUI-64 and GUID of a MAC", "[port]") {
  MacAddress mac{0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
  auto eui = vroce::device::eui64_from_mac(mac);
  CHECK(eui == std::array<uint8_t, 8>{0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56});
  uint64_t guid = vroce::device::guid_from_mac(mac);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&guid);
  CHECK(std::equal(eui.begin(), eui.end(), bytes));  // __be64: wire order in memory
  CHECK(same(vroce::device::link_local_gid(mac),
             gid({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56})));
}

TEST_CASE("derived MACs are stable, distinct, unicast and locally administered", "[port]") {
  MacAddress a = vroce::device::derive_local_mac("vroce0", "127.0.0.11");
  MacAddress again = vroce::device::derive_local_mac("vroce0", "127.0.0.11");
  MacAddress b = vroce::device::derive_local_mac("vroce1", "127.0.0.11");
  MacAddress c = vroce::device::derive_local_mac("vroce0", "127.0.0.12");
  CHECK(a == again);
  CHECK(a != b);
  CHECK(a != c);
  for (const MacAddress& mac : {a, b, c}) {
    CHECK((mac[0] & 0x01) == 0);  // unicast
    CHECK((mac[0] & 0x02) == 2);  // locally administered
    CHECK_FALSE(vroce::device::is_zero_mac(mac));
  }
  CHECK(vroce::device::is_zero_mac(MacAddress{}));
}

TEST_CASE("GID table laid out as a ConnectX's: link-local pair, then the address's", "[port]") {
  MacAddress mac{0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
  auto table = vroce::device::build_gid_table(address("127.0.2.9"), mac, 1, 256);
  REQUIRE(table.size() == 256);
  ibv_gid link_local =
      gid({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56});
  ibv_gid mapped = gid({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 2, 9});
  // 0/1: the default GID fe80::<EUI-64 of the MAC>, v1 then v2.
  CHECK(table[0].type == IBV_GID_TYPE_ROCE_V1);
  CHECK(same(table[0].gid, link_local));
  CHECK(table[1].type == IBV_GID_TYPE_ROCE_V2);
  CHECK(same(table[1].gid, link_local));
  // 2/3: the bound address, IPv4-mapped; RoCEv2 over IPv4 at index 3.
  CHECK(table[2].type == IBV_GID_TYPE_ROCE_V1);
  CHECK(same(table[2].gid, mapped));
  CHECK(table[3].type == IBV_GID_TYPE_ROCE_V2);
  CHECK(same(table[3].gid, mapped));
  for (size_t i = 0; i < 4; ++i) {
    CHECK(table[i].valid);
    CHECK(table[i].ndev_ifindex == 1);
  }
  for (size_t i = 4; i < table.size(); ++i) {
    CHECK_FALSE(table[i].valid);
  }

  auto v6 = vroce::device::build_gid_table(address("fd77::1"), mac, 7, 16);
  CHECK(same(v6[1].gid, link_local));
  CHECK(same(v6[3].gid, gid({0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})));
  CHECK(v6[3].type == IBV_GID_TYPE_ROCE_V2);
  CHECK(v6[2].ndev_ifindex == 7);
  CHECK_FALSE(v6[4].valid);

  // Bound to the default GID itself: the kernel lists an address once, so only 0/1.
  auto own = vroce::device::build_gid_table(address("fe80::5054:ff:fe12:3456"), mac, 3, 16);
  CHECK(same(own[1].gid, link_local));
  CHECK(own[1].type == IBV_GID_TYPE_ROCE_V2);
  CHECK_FALSE(own[2].valid);
  CHECK_FALSE(own[3].valid);
}

TEST_CASE("port attributes of a ConnectX port on Ethernet", "[port]") {
  auto speed = *vroce::device::port_speed_for_gbps(400);
  ibv_port_attr attr = vroce::device::make_port_attr(IBV_PORT_ACTIVE, IBV_MTU_1024, speed);
  CHECK(attr.state == IBV_PORT_ACTIVE);
  CHECK(attr.phys_state == 5);  // LinkUp
  CHECK(attr.max_mtu == IBV_MTU_4096);
  CHECK(attr.active_mtu == IBV_MTU_1024);
  CHECK(attr.link_layer == IBV_LINK_LAYER_ETHERNET);
  CHECK((attr.flags & IBV_QPF_GRH_REQUIRED) != 0);
  CHECK(attr.gid_tbl_len == 16);
  CHECK(attr.pkey_tbl_len == 1);
  CHECK(attr.lid == 0);
  CHECK(attr.port_cap_flags == 0x04010000U);
  CHECK(attr.max_msg_sz == 1U << 30);
  CHECK(attr.active_width == 2);
  CHECK(attr.active_speed == 128);
  ibv_port_attr down = vroce::device::make_port_attr(IBV_PORT_DOWN, IBV_MTU_1024, speed);
  CHECK(down.state == IBV_PORT_DOWN);
  CHECK(down.phys_state == 3);  // Disabled
}

TEST_CASE("device attributes: limits, identity, no atomics", "[port]") {
  uint64_t guid = vroce::device::guid_from_mac(MacAddress{0x02, 1, 2, 3, 4, 5});
  ibv_device_attr attr = vroce::device::make_device_attr(guid);
  CHECK(attr.node_guid == guid);
  CHECK(attr.sys_image_guid == guid);
  CHECK(attr.vendor_id == 0x025652);
  CHECK(attr.vendor_id != 0x02c9);  // not Mellanox: no mlx5-only paths in plugins
  CHECK(attr.vendor_part_id == 4791);
  CHECK(attr.max_qp_init_rd_atom == 16);
  CHECK(attr.max_qp_rd_atom == 16);
  CHECK(attr.phys_port_cnt == 1);
  CHECK(attr.atomic_cap == IBV_ATOMIC_NONE);
  CHECK(attr.max_qp == vroce::device::limits::kMaxQp);
  CHECK(attr.max_qp_wr == vroce::device::limits::kMaxQpWr);
  CHECK(attr.max_sge == vroce::device::limits::kMaxSge);
  CHECK(attr.max_cqe == vroce::device::limits::kMaxCqe);
  CHECK(attr.max_mr_size == vroce::device::limits::kMaxMrSize);
  CHECK(attr.max_pd == vroce::device::limits::kMaxPd);
  CHECK(std::string(attr.fw_ver) == vroce::device::limits::kFirmwareVersion);
}
