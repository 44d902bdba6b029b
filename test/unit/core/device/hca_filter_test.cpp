// NCCL_IB_HCA: NCCL's prefix / exact / exclude / port semantics, and clear errors for bad input.
#include "core/device/hca_filter.h"

#include <catch2/catch.hpp>

#include "result_checks.h"

namespace {

roce::HcaFilter parse(std::string_view text) {
  return roce::test::value_of(roce::parse_hca_filter(text));
}

std::string error_of(std::string_view text) {
  return roce::test::failure_of(roce::parse_hca_filter(text));
}

}  // namespace

TEST_CASE("an empty NCCL_IB_HCA accepts every device and port", "[hca]") {
  const roce::HcaFilter filter = parse("");
  CHECK(filter.matches("mlx5_0", 1));
  CHECK(filter.matches("vroce3", 2));
  CHECK(parse("   ").matches("anything", 1));
}

TEST_CASE("an NCCL_IB_HCA entry is a name prefix unless '=' asks for exact names", "[hca]") {
  const roce::HcaFilter prefix = parse("mlx5_1");
  CHECK(prefix.matches("mlx5_1", 1));
  CHECK(prefix.matches("mlx5_10", 1));
  CHECK_FALSE(prefix.matches("mlx5_0", 1));

  const roce::HcaFilter exact = parse("=mlx5_1");
  CHECK(exact.exact);
  CHECK(exact.matches("mlx5_1", 1));
  CHECK_FALSE(exact.matches("mlx5_10", 1));
}

TEST_CASE("'^' excludes the listed devices and is read before '='", "[hca]") {
  const roce::HcaFilter exclude = parse("^mlx5_1");
  CHECK(exclude.exclude);
  CHECK_FALSE(exclude.matches("mlx5_1", 1));
  CHECK_FALSE(exclude.matches("mlx5_10", 1));
  CHECK(exclude.matches("mlx5_0", 1));

  const roce::HcaFilter exclude_exact = parse("^=mlx5_1");
  CHECK(exclude_exact.exclude);
  CHECK(exclude_exact.exact);
  CHECK_FALSE(exclude_exact.matches("mlx5_1", 1));
  CHECK(exclude_exact.matches("mlx5_10", 1));
}

TEST_CASE("':port' limits an NCCL_IB_HCA entry to one port", "[hca]") {
  const roce::HcaFilter filter = parse("=mlx5_0:1,mlx5_2");
  REQUIRE(filter.entries.size() == 2);
  CHECK(filter.entries[0].port == 1);
  CHECK_FALSE(filter.entries[1].port.has_value());
  CHECK(filter.matches("mlx5_0", 1));
  CHECK_FALSE(filter.matches("mlx5_0", 2));
  CHECK(filter.matches("mlx5_2", 2));
  CHECK_FALSE(filter.matches("mlx5_1", 1));

  const roce::HcaFilter exclude_port = parse("^vroce0:2");
  CHECK(exclude_port.matches("vroce0", 1));
  CHECK_FALSE(exclude_port.matches("vroce0", 2));
}

TEST_CASE("spaces around NCCL_IB_HCA entries are ignored", "[hca]") {
  const roce::HcaFilter filter = parse(" mlx5_0 , mlx5_1:1 ");
  REQUIRE(filter.entries.size() == 2);
  CHECK(filter.entries[0].name == "mlx5_0");
  CHECK(filter.entries[1].name == "mlx5_1");
  CHECK(filter.entries[1].port == 1);
}

TEST_CASE("empty NCCL_IB_HCA entries are skipped, as NCCL's tokenizer skips them", "[hca]") {
  const roce::HcaFilter filter = parse("mlx5_0,,mlx5_1,");
  CHECK(filter.entries.size() == 2);
  CHECK(filter.matches("mlx5_0", 1));
  CHECK(filter.matches("mlx5_1", 1));
  CHECK_FALSE(filter.matches("mlx5_2", 1));
  CHECK(parse(",").matches("anything", 1));  // nothing named: every device, as unset
}

TEST_CASE("NCCL 2.30's name:port:rail:plane entries are accepted, and rail and plane do not filter",
          "[hca]") {
  const roce::HcaFilter filter = parse("=mlx5_0:1:0:1,mlx5_1:1:2");
  REQUIRE(filter.entries.size() == 2);
  CHECK(filter.entries[0].port == 1);
  CHECK(filter.entries[0].rail == 0);
  CHECK(filter.entries[0].plane == 1);
  CHECK(filter.entries[1].rail == 2);
  CHECK_FALSE(filter.entries[1].plane.has_value());
  CHECK(filter.matches("mlx5_0", 1));
  CHECK_FALSE(filter.matches("mlx5_0", 2));
  CHECK(filter.matches("mlx5_1", 1));
  CHECK_THAT(error_of("mlx5_0:1:x"), Catch::Contains("rail 'x'"));
  CHECK_THAT(error_of("mlx5_0:1:0:32768"), Catch::Contains("0..32767"));
  CHECK_THAT(error_of("mlx5_0:1:0:0:0"), Catch::Contains("more than name:port:rail:plane"));
}

TEST_CASE("empty NCCL_IB_HCA fields are unset, as NCCL reads them", "[hca]") {
  // NCCL's own documented form: any port, rail 0, plane 0.
  const roce::HcaFilter documented = parse("=mlx5_0::0:0");
  REQUIRE(documented.entries.size() == 1);
  CHECK_FALSE(documented.entries[0].port.has_value());
  CHECK(documented.entries[0].rail == 0);
  CHECK(documented.entries[0].plane == 0);
  CHECK(documented.matches("mlx5_0", 1));
  CHECK(documented.matches("mlx5_0", 2));
  CHECK_FALSE(documented.matches("mlx5_01", 1));

  const roce::HcaFilter trailing = parse("mlx5_0:");
  REQUIRE(trailing.entries.size() == 1);
  CHECK_FALSE(trailing.entries[0].port.has_value());
  CHECK(trailing.matches("mlx5_0", 2));

  const roce::HcaFilter plane_only = parse("mlx5_1:1::3,mlx5_2:::");
  REQUIRE(plane_only.entries.size() == 2);
  CHECK(plane_only.entries[0].port == 1);
  CHECK_FALSE(plane_only.entries[0].rail.has_value());
  CHECK(plane_only.entries[0].plane == 3);
  CHECK_FALSE(plane_only.entries[1].port.has_value());
  CHECK_FALSE(plane_only.entries[1].rail.has_value());
  CHECK_FALSE(plane_only.entries[1].plane.has_value());
}

TEST_CASE("the entry that selects a port is the first one naming it, and none under '^'", "[hca]") {
  const roce::HcaFilter filter = parse("mlx5_0:1:4:0,mlx5_0::5:1,mlx5_1");
  REQUIRE(filter.selecting_entry("mlx5_0", 1) != nullptr);
  CHECK(filter.selecting_entry("mlx5_0", 1)->rail == 4);
  REQUIRE(filter.selecting_entry("mlx5_0", 2) != nullptr);
  CHECK(filter.selecting_entry("mlx5_0", 2)->rail == 5);
  REQUIRE(filter.selecting_entry("mlx5_1", 1) != nullptr);
  CHECK_FALSE(filter.selecting_entry("mlx5_1", 1)->rail.has_value());
  CHECK(filter.selecting_entry("mlx5_2", 1) == nullptr);
  // An excluding list selects by leaving out: no entry gives a rail.
  CHECK(parse("^mlx5_1:1:2:3").selecting_entry("mlx5_0", 1) == nullptr);
  CHECK(parse("").selecting_entry("mlx5_0", 1) == nullptr);
}

TEST_CASE("a malformed NCCL_IB_HCA is an error naming the entry and the syntax", "[hca]") {
  CHECK_THAT(error_of("mlx5_0:x"), Catch::Contains("port 'x'"));
  CHECK_THAT(error_of("mlx5_0:0"), Catch::Contains("1..255"));
  CHECK_THAT(error_of("mlx5_0:256"), Catch::Contains("1..255"));
  CHECK_THAT(error_of(":1"), Catch::Contains("no device name"));
  CHECK_THAT(error_of("^"), Catch::Contains("no device follows"));
  CHECK_THAT(error_of("^="), Catch::Contains("no device follows"));
  CHECK_THAT(error_of("mlx5_0,=mlx5_1"), Catch::Contains("not a device name"));
  const std::string error = error_of("mlx5_0:x");
  CHECK_THAT(error, Catch::StartsWith("NCCL_IB_HCA=mlx5_0:x"));
  CHECK_THAT(error, Catch::Contains("[^][=]name[:port[:rail[:plane]]]"));
}
