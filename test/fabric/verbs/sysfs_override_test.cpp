// vroce's fake sysfs (VROCE_SYSFS_ROOT): the traffic-class override it emulates
// (VROCE_TC_OVERRIDE), the PCI path and the GID type files, read through NCCL_ROCE_SYSFS_ROOT.
#include <catch2/catch.hpp>

#include "../../unit/fixture_tree.h"
#include "core/device/device_discovery.h"
#include "test_addresses.h"
#include "vroce_process.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace roce;

TEST_CASE("an emulated mlx5 traffic-class override is detected and conflicts with another class",
          "[sysfs][vroce]") {
  test::FixtureTree tree;
  test::set_env("VROCE_SYSFS_ROOT", tree.root());
  test::set_env("VROCE_TC_OVERRIDE", "236");
  test::set_env("NCCL_ROCE_SYSFS_ROOT", tree.root());
  const auto lib = test::load_vroce(vroce_device_list({"pv0"}));
  const DiscoveryResult found =
      test::value_of(discover_devices(lib, DiscoveryOptions::from_config(test::config_from_env())));
  REQUIRE(found.devices.size() == 1);
  const PluginDevice& dev = found.devices[0];
  REQUIRE(dev.tc_override.has_value());
  CHECK(dev.tc_override->global_class == 236);
  CHECK(dev.tc_override->file == tree.path("class/infiniband/pv0/tc/1/traffic_class"));
  CHECK(check_tc_override(*dev.tc_override, 236).has_value());
  const std::string conflict = test::failure_of(check_tc_override(*dev.tc_override, 104));
  CHECK(conflict.find("Global tclass=236") != std::string::npos);
  CHECK(conflict.find("traffic class 104") != std::string::npos);
}

TEST_CASE("the fake sysfs gives a PCI path and GID types that agree with the verbs query",
          "[sysfs][vroce]") {
  test::FixtureTree tree;
  test::set_env("VROCE_SYSFS_ROOT", tree.root());
  test::set_env("NCCL_ROCE_SYSFS_ROOT", tree.root());
  const auto lib = test::load_vroce(vroce_device_list({"pv0"}));
  const DiscoveryOptions options = DiscoveryOptions::from_config(test::config_from_env());
  const DiscoveryResult with_gid_ex = test::value_of(discover_devices(lib, options));
  REQUIRE(with_gid_ex.devices.size() == 1);
  const PluginDevice& dev = with_gid_ex.devices[0];
  REQUIRE(dev.pci_path.has_value());
  CHECK(dev.pci_path->rfind(tree.root(), 0) == 0);
  CHECK_FALSE(dev.tc_override.has_value());  // no VROCE_TC_OVERRIDE: no tc directory

  // The same library without _ibv_query_gid_ex: types now come from the sysfs files.
  ibv::Functions without_gid_ex = lib->fn();
  without_gid_ex.query_gid_ex = nullptr;
  const auto sysfs_only = ibv::Library::from_functions(without_gid_ex, "vroce without gid_ex");
  const DiscoveryResult with_sysfs = test::value_of(discover_devices(sysfs_only, options));
  REQUIRE(with_sysfs.devices.size() == 1);
  const PluginDevice& again = with_sysfs.devices[0];
  CHECK(again.gid.index == dev.gid.index);
  REQUIRE(again.gid_table.size() == dev.gid_table.size());
  for (size_t i = 0; i < dev.gid_table.size(); ++i) {
    INFO("gid index " << i);
    CHECK(again.gid_table[i].gid == dev.gid_table[i].gid);
    // Empty slots have no type either way; used slots must agree.
    if (dev.gid_table[i].type != GidType::Unknown) {
      CHECK(again.gid_table[i].type == dev.gid_table[i].type);
    }
  }
}
