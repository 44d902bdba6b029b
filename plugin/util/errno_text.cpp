// errno_text(): strerror_r (GNU form) plus the symbolic name, which operators search for.
#include "util/errno_text.h"

#include <cerrno>
#include <cstring>

namespace roce {

std::string errno_text(int error_number) {
  char buffer[128];
  const char* text = strerrorname_np(error_number);
  const std::string name = text != nullptr ? text : "errno " + std::to_string(error_number);
  return std::string(strerror_r(error_number, buffer, sizeof(buffer))) + " (" + name + ")";
}

}  // namespace roce
