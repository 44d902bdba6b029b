// Catch2 checks for the setup error type (plugin/util/result.h, vroce/src/util/result.h: both
// are tl::expected<T, std::string>): the message of a result that must fail, and the value of
// one that must succeed (with the failure's message as the note when it does not).
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <tl/expected.hpp>
#include <utility>

namespace roce::test {

template <typename T>
std::string failure_of(const tl::expected<T, std::string>& result) {
  REQUIRE_FALSE(result.has_value());
  return result.error();
}

template <typename T>
T value_of(tl::expected<T, std::string> result) {
  INFO((result ? std::string() : result.error()));
  REQUIRE(result.has_value());
  return std::move(*result);
}

}  // namespace roce::test
