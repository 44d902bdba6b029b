// The setup path's one error type, for the plugin, vroce (vroce/src/util/result.h brings it into
// namespace vroce) and the tools. A function that can fail while the plugin starts, a listener
// opens, a connection is set up or vroce reads its devices returns Result<T>: the value, or one
// message that names the cause and the fix, ready for the WARN or the exception text its caller
// writes (docs/design.md, "Errors"). It is tl::expected (Debian's libexpected-dev, header-only)
// with a string as the error, the same shape as C++23's std::expected, which GCC 12 lacks.
#pragma once

#include <string>
#include <tl/expected.hpp>
#include <utility>

namespace roce {

template <typename T>
using Result = tl::expected<T, std::string>;

// A step that yields nothing but can fail: `Status check(...)`, `return {};` on success.
using Status = Result<void>;

// The error side of any Result: `return failure("port 1 is down; check the link");`.
inline tl::unexpected<std::string> failure(std::string message) {
  return tl::unexpected<std::string>(std::move(message));
}

// The message of a failure, "" for a success: for a line or a test's INFO that covers both.
template <typename T>
std::string error_text(const Result<T>& result) {
  return result ? std::string() : result.error();
}

}  // namespace roce
