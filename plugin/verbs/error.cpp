// errno formatting for verbs errors: see error.h.
#include "verbs/error.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace roce::verbs {

std::string errno_text(int error_number) {
  const char* name = strerrorname_np(error_number);
  if (name == nullptr) {
    return fmt::format("errno {}", error_number);
  }
  return fmt::format("{} ({})", name, strerrordesc_np(error_number));
}

int verbs_errno(int rc) noexcept {
  if (rc >= 0) {
    return rc;
  }
  return errno != 0 ? errno : EIO;
}

}  // namespace roce::verbs
