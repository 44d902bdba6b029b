// Default locations of the plugin and vroce.
#include "locations.h"

#include <unistd.h>

#include <climits>

#ifndef ROCE_BENCH_BUILD_PLUGIN_REL
#define ROCE_BENCH_BUILD_PLUGIN_REL "../lib/libnccl-net-roce.so"
#endif
#ifndef ROCE_BENCH_BUILD_VROCE_REL
#define ROCE_BENCH_BUILD_VROCE_REL "../vroce/lib/libibverbs.so.1"
#endif
#ifndef ROCE_BENCH_INSTALL_PLUGIN_REL
#define ROCE_BENCH_INSTALL_PLUGIN_REL "../lib/libnccl-net-roce.so"
#endif
#ifndef ROCE_BENCH_INSTALL_VROCE_REL
#define ROCE_BENCH_INSTALL_VROCE_REL "../lib/nccl-net-roce/vroce/libibverbs.so.1"
#endif

namespace roce::bench {
namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string first_existing(std::initializer_list<const char*> relatives) {
  const std::string dir = directory_of(executable_path());
  for (const char* rel : relatives) {
    const std::string candidate = dir + "/" + rel;
    char resolved[PATH_MAX];
    if (access(candidate.c_str(), R_OK) == 0 && realpath(candidate.c_str(), resolved) != nullptr) {
      return resolved;
    }
  }
  return {};
}

}  // namespace

std::string executable_path() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) {
    return "roce-bench";
  }
  return std::string(buffer, static_cast<std::size_t>(n));
}

std::string default_plugin_path() {
  const std::string found =
      first_existing({ROCE_BENCH_BUILD_PLUGIN_REL, ROCE_BENCH_INSTALL_PLUGIN_REL});
  return found.empty() ? "libnccl-net-roce.so" : found;
}

std::string default_vroce_path() {
  return first_existing({ROCE_BENCH_BUILD_VROCE_REL, ROCE_BENCH_INSTALL_VROCE_REL});
}

}  // namespace roce::bench
