// errno_text(): see errno_text.h. strerrorname_np and strerrordesc_np (glibc 2.32) return static
// strings, so no buffer is shared between threads.
#include "util/errno_text.h"

#include <cstring>

namespace roce {

std::string errno_text(int error_number) {
  const char* name = strerrorname_np(error_number);
  if (name == nullptr) {
    return "errno " + std::to_string(error_number);
  }
  return std::string(name) + " (" + strerrordesc_np(error_number) + ")";
}

}  // namespace roce
