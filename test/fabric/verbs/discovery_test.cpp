// Device discovery over vroce devices: names, speed, MTU, GID, NCCL_IB_HCA, NCCL_IB_GID_INDEX.
#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "core/device/device_discovery.h"
#include "test_addresses.h"
#include "vroce_process.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace roce;

namespace {

std::array<uint8_t, 16> v4_mapped(const char* address) {
  std::array<uint8_t, 16> gid{};
  gid[10] = 0xff;
  gid[11] = 0xff;
  REQUIRE(inet_pton(AF_INET, address, gid.data() + 12) == 1);
  return gid;
}

DiscoveryResult discover(const std::shared_ptr<const ibv::Library>& lib) {
  return test::value_of(
      discover_devices(lib, DiscoveryOptions::from_config(test::config_from_env())));
}

std::vector<std::string> names_of(const DiscoveryResult& result) {
  std::vector<std::string> names;
  for (const auto& device : result.devices) {
    names.push_back(device.name);
  }
  return names;
}

}  // namespace

TEST_CASE("discovery finds every vroce device with its speed, MTU and RoCE v2 GID",
          "[discovery][vroce]") {
  const auto lib = test::load_vroce(vroce_device_list({"pv0", "pv1"}));
  const DiscoveryResult result = discover(lib);
  REQUIRE(result.devices.size() == 2);
  const std::string addresses[] = {test_address(0), test_address(1)};
  for (size_t i = 0; i < 2; ++i) {
    const PluginDevice& dev = result.devices[i];
    INFO("device " << dev.name);
    CHECK(dev.name == (i == 0 ? "pv0" : "pv1"));
    CHECK(dev.ibv_name == dev.name);
    CHECK(dev.port == 1);
    CHECK(dev.speed_mbps == 400000);        // VROCE_PORT_GBPS defaults to 400
    CHECK(dev.active_mtu == IBV_MTU_4096);  // lo's MTU 65536 gives 4096
    CHECK(dev.link_layer == IBV_LINK_LAYER_ETHERNET);
    CHECK(dev.max_comms > 0);
    CHECK(dev.guid != 0);
    CHECK(dev.context != nullptr);
    CHECK_FALSE(dev.pci_path.has_value());  // no sysfs tree for vroce devices here
    CHECK(dev.gid.entry.type == GidType::RoceV2);
    CHECK(dev.gid.entry.gid == v4_mapped(addresses[i].c_str()));
    REQUIRE(dev.gid.index >= 0);
    REQUIRE(static_cast<size_t>(dev.gid.index) < dev.gid_table.size());
    CHECK(dev.gid_table[static_cast<size_t>(dev.gid.index)].gid == dev.gid.entry.gid);
  }
  CHECK(result.devices[0].guid != result.devices[1].guid);
}

// vroce's GID table is a ConnectX's: fe80::<EUI-64> v1/v2 at 0/1, the address's v1/v2 at 2/3.
// The automatic choice must pass over the link-local pair to the IPv4-mapped RoCE v2 entry.
TEST_CASE("the plugin picks GID 3 on vroce's ConnectX table, whose GID 0 is link-local v1",
          "[discovery][vroce]") {
  const auto lib = test::load_vroce(vroce_device_list({"pv0"}));
  const DiscoveryResult result = discover(lib);
  REQUIRE(result.devices.size() == 1);
  const PluginDevice& dev = result.devices[0];
  CHECK(dev.gid.index == 3);
  CHECK(dev.gid.entry.type == GidType::RoceV2);
  CHECK(dev.gid.entry.gid == v4_mapped(test_address(0).c_str()));

  ibv_gid gid{};
  REQUIRE(lib->fn().query_gid(dev.context->get(), 1, 0, &gid) == 0);
  CHECK(gid.raw[0] == 0xfe);
  CHECK(gid.raw[1] == 0x80);
  CHECK(gid.global.interface_id == dev.guid);  // the EUI-64 of the MAC is the node GUID
  REQUIRE(lib->fn().query_gid_ex != nullptr);
  ibv_gid_entry entry{};
  REQUIRE(lib->fn().query_gid_ex(dev.context->get(), 1, 0, &entry, 0, sizeof(entry)) == 0);
  CHECK(entry.gid_type == IBV_GID_TYPE_ROCE_V1);
  REQUIRE(lib->fn().query_gid_ex(dev.context->get(), 1, 1, &entry, 0, sizeof(entry)) == 0);
  CHECK(entry.gid_type == IBV_GID_TYPE_ROCE_V2);
  CHECK(std::equal(std::begin(entry.gid.raw), std::end(entry.gid.raw), std::begin(gid.raw)));
}

TEST_CASE("NCCL_IB_HCA selects vroce devices with NCCL's meaning", "[discovery][vroce]") {
  // One load for all filters: vroce reads its device list once per process.
  const auto lib = test::load_vroce(vroce_device_list({"pv0", "pv1", "pv10"}));
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"", {"pv0", "pv1", "pv10"}},      // unset: every device
      {"pv1", {"pv1", "pv10"}},          // a prefix
      {"=pv1", {"pv1"}},                 // an exact name
      {"^pv1", {"pv0"}},                 // exclusion (of the prefix)
      {"^=pv1", {"pv0", "pv10"}},        // exclusion of an exact name
      {"=pv0:1,pv10", {"pv0", "pv10"}},  // "=" applies to the whole list
      {"=pv0:2", {}},                    // a port the device does not have
  };
  for (const auto& [filter, expected] : cases) {
    INFO("NCCL_IB_HCA=" << filter);
    test::set_env("NCCL_IB_HCA", filter);
    const DiscoveryResult result = discover(lib);
    CHECK(names_of(result) == expected);
    if (expected.size() < 3) {
      CHECK(result.skipped_summary().find("not selected by NCCL_IB_HCA") != std::string::npos);
    }
  }
}

TEST_CASE("NCCL_IB_GID_INDEX naming a RoCE v1 entry is an init error naming the v2 index",
          "[discovery][vroce]") {
  const auto lib = test::load_vroce(vroce_device_list({"pv0"}));
  const DiscoveryResult automatic = discover(lib);
  REQUIRE(automatic.devices.size() == 1);
  const PluginDevice& dev = automatic.devices[0];
  // The RoCE v1 twin of the selected address, wherever vroce's table puts it.
  int v1_index = -1;
  for (const auto& entry : dev.gid_table) {
    if (entry.type == GidType::RoceV1 && entry.gid == dev.gid.entry.gid) {
      v1_index = entry.index;
    }
  }
  REQUIRE(v1_index >= 0);
  test::set_env("NCCL_IB_GID_INDEX", std::to_string(v1_index));
  const std::string what = test::failure_of(
      discover_devices(lib, DiscoveryOptions::from_config(test::config_from_env())));
  INFO(what);
  CHECK(what.find(fmt::format("NCCL_IB_GID_INDEX={}", v1_index)) != std::string::npos);
  CHECK(what.find(fmt::format("NCCL_IB_GID_INDEX={}", dev.gid.index)) != std::string::npos);
  test::set_env("NCCL_IB_GID_INDEX", std::to_string(dev.gid.index));
  const DiscoveryResult overridden = discover(lib);
  REQUIRE(overridden.devices.size() == 1);
  CHECK(overridden.devices[0].gid.index == dev.gid.index);
}
