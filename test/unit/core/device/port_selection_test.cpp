// Which ports become plugin devices, and their names.
#include "core/device/port_selection.h"

#include <catch2/catch.hpp>

#include "result_checks.h"

using namespace roce;

namespace {

PortSnapshot port(int number, ibv_port_state state = IBV_PORT_ACTIVE,
                  uint8_t link = IBV_LINK_LAYER_ETHERNET) {
  PortSnapshot p;
  p.port = number;
  p.state = state;
  p.link_layer = link;
  p.speed_code = 128;
  p.width_code = 2;
  return p;
}

HcaFilter filter_of(const char* text) {
  return roce::test::value_of(parse_hca_filter(text));
}

}  // namespace

TEST_CASE("only ACTIVE Ethernet ports are used, each skip says why", "[port_selection]") {
  std::vector<DeviceSnapshot> devices = {
      {"mlx5_0", {port(1), port(2, IBV_PORT_DOWN)}},
      {"mlx5_1", {port(1, IBV_PORT_ACTIVE, IBV_LINK_LAYER_INFINIBAND)}},
      {"mlx5_2", {port(1, IBV_PORT_INIT)}},
  };
  const PortSelection selection = select_ports(devices, filter_of(""));
  REQUIRE(selection.usable.size() == 1);
  CHECK(selection.usable[0].device == 0);
  CHECK(selection.usable[0].port == 0);
  REQUIRE(selection.skipped.size() == 3);
  CHECK(selection.skipped[0].device == "mlx5_0");
  CHECK(selection.skipped[0].port == 2);
  CHECK(selection.skipped[0].reason == "state DOWN, not ACTIVE");
  CHECK(selection.skipped[1].reason.find("InfiniBand") != std::string::npos);
  CHECK(selection.skipped[2].reason == "state INIT, not ACTIVE");
}

TEST_CASE("NCCL_IB_HCA selects devices and ports with NCCL's meaning", "[port_selection]") {
  std::vector<DeviceSnapshot> devices = {
      {"mlx5_0", {port(1), port(2)}},
      {"mlx5_1", {port(1)}},
      {"mlx5_10", {port(1)}},
  };
  SECTION("a prefix matches every device it begins") {
    const auto selection = select_ports(devices, filter_of("mlx5_1"));
    REQUIRE(selection.usable.size() == 2);
    CHECK(selection.usable[0].device == 1);
    CHECK(selection.usable[1].device == 2);
  }
  SECTION("'=' asks for exact names") {
    const auto selection = select_ports(devices, filter_of("=mlx5_1"));
    REQUIRE(selection.usable.size() == 1);
    CHECK(selection.usable[0].device == 1);
  }
  SECTION("':port' limits an entry to one port") {
    const auto selection = select_ports(devices, filter_of("mlx5_0:2"));
    REQUIRE(selection.usable.size() == 1);
    CHECK(selection.usable[0].device == 0);
    CHECK(selection.usable[0].port == 1);
  }
  SECTION("'^' excludes") {
    const auto selection = select_ports(devices, filter_of("^mlx5_0"));
    REQUIRE(selection.usable.size() == 2);
    CHECK(selection.usable[0].device == 1);
    CHECK(selection.skipped.size() == 2);
    CHECK(selection.skipped[0].reason == "not selected by NCCL_IB_HCA");
  }
}

TEST_CASE("a device contributing several ports gets ':port' names, others keep their name",
          "[port_selection]") {
  const std::vector<NamedPort> ports = {{"mlx5_0", 1}, {"mlx5_0", 2}, {"mlx5_1", 1}};
  const auto names = plugin_device_names(ports);
  CHECK(names == std::vector<std::string>{"mlx5_0:1", "mlx5_0:2", "mlx5_1"});
}

TEST_CASE("a device with one usable port of two keeps its plain name", "[port_selection]") {
  const std::vector<NamedPort> ports = {{"mlx5_0", 2}};
  CHECK(plugin_device_names(ports) == std::vector<std::string>{"mlx5_0"});
}
