// vroce's setup error type, the same shape as the plugin's (plugin/util/result.h; vroce is a
// library of its own and includes nothing of the plugin): Result<T> holds the value or one
// message that says why and how to fix it. tl::expected, Debian's header-only libexpected-dev.
#pragma once

#include <string>
#include <tl/expected.hpp>
#include <utility>

namespace vroce {

template <typename T>
using Result = tl::expected<T, std::string>;

// A step that yields nothing but can fail: `return {};` on success.
using Status = Result<void>;

// `return failure("netdev eth9 does not exist; ...");` from any function returning a Result.
inline tl::unexpected<std::string> failure(std::string why) {
  return tl::unexpected<std::string>(std::move(why));
}

}  // namespace vroce
