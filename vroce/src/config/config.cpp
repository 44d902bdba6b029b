// config(): the process environment read once, through the pure parsers in parsers.cpp.
#include "config/config.h"

#include <sched.h>

#include <cstdlib>

#include "config/parsers.h"
#include "util/log.h"

namespace vroce {

const Config& config() {
  // A function-local static: initialised once, thread-safely, on first use, so every malformed
  // variable is reported exactly once per process.
  static const Config parsed = [] {
    std::vector<std::string> errors;
    Config result = parse_config(
        [](const char* name) -> std::optional<std::string> {
          const char* value = std::getenv(name);
          if (value == nullptr) {
            return std::nullopt;
          }
          return std::string(value);
        },
        &errors);
    for (const std::string& error : errors) {
      VROCE_LOG(Error, "%s", error.c_str());
    }
    return result;
  }();
  return parsed;
}

uint32_t spin_after_activity_us() {
  constexpr uint32_t kDefaultSpinUs = 50;
  constexpr int kSpinMinCpus = 4;
  if (const auto& configured = config().spin_us) {
    return *configured;
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  int usable = ::sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return usable >= kSpinMinCpus ? kDefaultSpinUs : 0;
}

}  // namespace vroce
