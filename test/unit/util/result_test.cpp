// The setup path's error type (include/roce/result.h): a value or one message, and the properties
// the converted call sites rely on: the message arrives unchanged through every hop that forwards
// it, a Status is success by default, and reading the value of a failure cannot go unnoticed.
#include "roce/result.h"

#include <catch2/catch.hpp>
#include <string>

namespace {

roce::Result<int> parse_port(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    return roce::failure("port '" + text + "' is not a number; give 1..65535");
  }
  return std::stoi(text);
}

roce::Status check_range(int port) {
  if (port < 1 || port > 65535) {
    return roce::failure("port " + std::to_string(port) + " is outside 1..65535");
  }
  return {};
}

// How a caller one layer up forwards the first failure without rewording it.
roce::Result<int> parse_checked_port(const std::string& text) {
  roce::Result<int> port = parse_port(text);
  if (!port) {
    return roce::failure(port.error());
  }
  if (roce::Status range = check_range(*port); !range) {
    return roce::failure(range.error());
  }
  return *port;
}

}  // namespace

TEST_CASE("a result carries either the value or the message that names cause and fix", "[result]") {
  const roce::Result<int> good = parse_port("4791");
  REQUIRE(good.has_value());
  CHECK(*good == 4791);

  const roce::Result<int> bad = parse_port("47x1");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error() == "port '47x1' is not a number; give 1..65535");
}

TEST_CASE("a status is success by default and a failure keeps its message", "[result]") {
  const roce::Status ok;
  CHECK(ok.has_value());
  CHECK(check_range(80).has_value());
  const roce::Status refused = check_range(70000);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error() == "port 70000 is outside 1..65535");
}

TEST_CASE("a forwarded failure reaches the caller word for word, the first one wins", "[result]") {
  CHECK(parse_checked_port("8080").value() == 8080);
  CHECK(parse_checked_port("").error() == "port '' is not a number; give 1..65535");
  CHECK(parse_checked_port("99999").error() == "port 99999 is outside 1..65535");
  // and_then chains the same way: the later step never runs after a failure.
  int later_steps = 0;
  const roce::Result<int> chained = parse_port("x").and_then([&](int port) -> roce::Result<int> {
    ++later_steps;
    return port;
  });
  CHECK(later_steps == 0);
  CHECK(chained.error() == "port 'x' is not a number; give 1..65535");
}

TEST_CASE("reading the value of a failure throws instead of returning garbage", "[result]") {
  const roce::Result<int> bad = parse_port("none");
  CHECK_THROWS_AS(bad.value(), tl::bad_expected_access<std::string>);
}
