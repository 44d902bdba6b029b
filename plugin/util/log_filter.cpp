// NCCL_DEBUG / NCCL_DEBUG_SUBSYS parsing with NCCL's rules (case-insensitive names, a leading '^'
// inverts the subsystem list, unknown names are ignored).
#include "util/log_filter.h"

#include <strings.h>

#include <algorithm>
#include <string_view>

#include "nccl_net/debug_names.h"

namespace roce::log {
namespace {

using nccl_debug_names::kLevels;
using nccl_debug_names::kSubsystems;

bool equals_ignoring_case(std::string_view text, const char* name) {
  const std::string_view other(name);
  return text.size() == other.size() && strncasecmp(text.data(), name, text.size()) == 0;
}

}  // namespace

Filter parse_filter(const char* nccl_debug, const char* nccl_debug_subsys,
                    bool forwarding) noexcept {
  Filter filter;
  int level = -1;
  if (nccl_debug != nullptr) {
    for (const auto& entry : kLevels) {
      if (equals_ignoring_case(nccl_debug, entry.name)) {
        level = static_cast<int>(entry.value);
      }
    }
  }
  if (forwarding) {
    filter.level = std::max(level, static_cast<int>(NCCL_LOG_WARN));
  } else {
    filter.level = level < 0 ? static_cast<int>(NCCL_LOG_WARN) : level;
  }

  if (nccl_debug_subsys != nullptr) {
    std::string_view list(nccl_debug_subsys);
    const bool invert = !list.empty() && list.front() == '^';
    if (invert) {
      list.remove_prefix(1);
    }
    unsigned long mask = invert ? ~0UL : 0UL;
    while (!list.empty()) {
      const size_t comma = list.find(',');
      const std::string_view item = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      for (const auto& entry : kSubsystems) {
        if (equals_ignoring_case(item, entry.name)) {
          mask = invert ? (mask & ~entry.value) : (mask | entry.value);
        }
      }
    }
    filter.mask = mask;
  }
  return filter;
}

}  // namespace roce::log
