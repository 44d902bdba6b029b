// mlx5's host-level traffic-class override file.
#include "core/device/tc_override.h"

#include <catch2/catch.hpp>

#include "fixture_tree.h"
#include "result_checks.h"

using namespace roce;
using roce::test::failure_of;
using roce::test::FixtureTree;
using roce::test::value_of;

TEST_CASE("an empty override file means no override", "[tc_override]") {
  const auto parsed = parse_tc_override("");
  REQUIRE(parsed.has_value());
  CHECK_FALSE(parsed->any());
}

TEST_CASE("'Global tclass=N' is the class every QP of the port gets", "[tc_override]") {
  const auto parsed = parse_tc_override("Global tclass=106\n");
  REQUIRE(parsed.has_value());
  CHECK(parsed->global_class == 106);
  CHECK(parsed->rules.empty());
}

TEST_CASE("address rules after the global line are read with their classes", "[tc_override]") {
  const auto parsed = parse_tc_override(
      "Global tclass=104\n"
      "src_ip=10.0.0.1,dst_ip=10.0.1.0/24,tclass=96\n"
      "dst_ip6=fd00::1,tclass=160\n");
  REQUIRE(parsed.has_value());
  CHECK(parsed->global_class == 104);
  REQUIRE(parsed->rules.size() == 2);
  CHECK(parsed->rules[0].match == "src_ip=10.0.0.1,dst_ip=10.0.1.0/24");
  CHECK(parsed->rules[0].traffic_class == 96);
  CHECK(parsed->rules[1].match == "dst_ip6=fd00::1");
  CHECK(parsed->rules[1].traffic_class == 160);
}

TEST_CASE("rules without a global class are an override too", "[tc_override]") {
  const auto parsed = parse_tc_override("dst_ip=192.168.0.0/16,tclass=0\n");
  REQUIRE(parsed.has_value());
  CHECK_FALSE(parsed->global_class.has_value());
  CHECK(parsed->any());
}

TEST_CASE("lines that are not the documented forms are an error naming the line", "[tc_override]") {
  CHECK_THAT(failure_of(parse_tc_override("Global tclass=300\n")), Catch::Contains("line 1"));
  CHECK_THAT(failure_of(parse_tc_override("Global tclass=104\nbogus\n")),
             Catch::Contains("line 2 'bogus'"));
  CHECK_THAT(failure_of(parse_tc_override("dst_ip=1.2.3.4,tclass=x\n")),
             Catch::Contains("neither 'Global tclass=<n>' nor an address rule"));
  CHECK_THAT(failure_of(parse_tc_override("dst_ip=1.2.3.4,notclass=5\n")),
             Catch::Contains("neither 'Global tclass=<n>' nor an address rule"));
}

TEST_CASE("a global class different from the configured one is a conflict naming both",
          "[tc_override]") {
  TcOverride info;
  info.file = "/sys/class/infiniband/mlx5_0/tc/1/traffic_class";
  info.global_class = 236;
  CHECK(check_tc_override(info, 236).has_value());
  const std::string conflict = failure_of(check_tc_override(info, 104));
  CHECK(conflict.find(info.file) != std::string::npos);
  CHECK(conflict.find("Global tclass=236") != std::string::npos);
  CHECK(conflict.find("traffic class 104 (dscp 26)") != std::string::npos);
}

TEST_CASE("a rule with another class is reported when no global class decides", "[tc_override]") {
  TcOverride info;
  info.file = "f";
  info.rules = {{"dst_ip=10.0.0.0/8", 104}, {"dst_ip=11.0.0.0/8", 96}};
  CHECK(failure_of(check_tc_override(info, 104)).find("dst_ip=11.0.0.0/8") != std::string::npos);
  info.global_class = 104;  // the global class wins over rules in the driver
  CHECK(check_tc_override(info, 104).has_value());
}

TEST_CASE("the override file is read from the port's tc directory under the sysfs root",
          "[tc_override]") {
  FixtureTree tree;
  SECTION("absent: no driver support, no override") {
    tree.mkdir("class/infiniband/mlx5_0");
    CHECK_FALSE(value_of(read_tc_override(tree.root(), "mlx5_0", 1)).has_value());
  }
  SECTION("present") {
    tree.write("class/infiniband/mlx5_0/tc/1/traffic_class", "Global tclass=106\n");
    const std::optional<TcOverride> info = value_of(read_tc_override(tree.root(), "mlx5_0", 1));
    REQUIRE(info.has_value());
    CHECK(info->global_class == 106);
    CHECK(info->file == tree.path("class/infiniband/mlx5_0/tc/1/traffic_class"));
    CHECK_FALSE(value_of(read_tc_override(tree.root(), "mlx5_0", 2)).has_value());
  }
  SECTION("present but unparseable: an error naming the file") {
    tree.write("class/infiniband/mlx5_0/tc/1/traffic_class", "garbage\n");
    CHECK_THAT(failure_of(read_tc_override(tree.root(), "mlx5_0", 1)),
               Catch::Contains("tc/1/traffic_class") && Catch::Contains("garbage"));
  }
}
