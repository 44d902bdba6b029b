// Trimming (util/text.h), the one definition behind the settings, NCCL_IB_HCA, sysfs and
// traffic-class override parsers.
#include "util/text.h"

#include <catch2/catch.hpp>
#include <string_view>

using namespace std::string_view_literals;

TEST_CASE("trim removes the C locale's white space at both ends and keeps the inside", "[text]") {
  CHECK(roce::trim(" \t\n\v\f\r mlx5_0 : 1 \r\n") == "mlx5_0 : 1");
  CHECK(roce::trim("mlx5_0") == "mlx5_0");
  CHECK(roce::trim_front("  a b  ") == "a b  ");
  CHECK(roce::trim_back("  a b  ") == "  a b");
}

TEST_CASE("a text of padding only trims to an empty view inside it", "[text]") {
  const std::string_view padding = " \t ";
  const std::string_view trimmed = roce::trim(padding);
  CHECK(trimmed.empty());
  CHECK(trimmed.data() == padding.data() + padding.size());
  CHECK(roce::trim_back(padding).data() == padding.data());
  CHECK(roce::trim("").empty());
}

TEST_CASE("a named set trims only its characters, NUL among them when the set holds one",
          "[text]") {
  CHECK(roce::trim_back("tclass=3,\0\0"sv, ",\0"sv) == "tclass=3");
  CHECK(roce::trim_back("tclass=3\n"sv, ",\0"sv) == "tclass=3\n");
  CHECK(roce::trim_front("\t,x,"sv, "\t"sv) == ",x,");
  CHECK(roce::trim(",x,"sv, ","sv) == "x");
}
