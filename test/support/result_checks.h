// Catch2 checks for the setup error type (include/roce/result.h, which vroce names too): the
// message of a result that must fail, and the value of one that must succeed (with the failure's
// message as the note when it does not).
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <utility>

#include "roce/result.h"

namespace roce::test {

template <typename T>
std::string failure_of(const Result<T>& result) {
  REQUIRE_FALSE(result.has_value());
  return result.error();
}

template <typename T>
T value_of(Result<T> result) {
  INFO(error_text(result));
  REQUIRE(result.has_value());
  return std::move(*result);
}

}  // namespace roce::test
