#include "util/sysfs_path.h"

#include <cstdlib>
#include <string>

namespace vroce {

const char* sysfs_mount_path() noexcept {
  static const std::string path = [] {
    const char* env = std::getenv("SYSFS_PATH");
    std::string value = env != nullptr && env[0] != '\0' ? env : "/sys";
    while (value.size() > 1 && value.back() == '/') {
      value.pop_back();
    }
    return value;
  }();
  return path.c_str();
}

}  // namespace vroce
