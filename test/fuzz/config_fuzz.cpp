// libFuzzer target: the configuration parser (plugin/util/config.h parse_config) with a map
// lookup. The input is "NAME=VALUE" lines; names are also drawn from the settings registry by a
// leading index byte so the fuzzer reaches every setting's value parser quickly. Properties: a
// refusal always says why, and parsing the same environment twice gives the same result.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/config.h"

namespace {

std::optional<std::string> lookup(std::string_view name, void* user) {
  const auto& env = *static_cast<const std::map<std::string, std::string, std::less<>>*>(user);
  auto it = env.find(name);
  if (it == env.end()) {
    return std::nullopt;
  }
  return it->second;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& registry = roce::settings();
  std::map<std::string, std::string, std::less<>> env;
  const std::string text(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) {
      continue;
    }
    std::string name;
    std::string value;
    const size_t eq = line.find('=');
    // A line "#<k>=VALUE" names the k-th registered setting.
    if (line[0] == '#' && line.size() >= 2) {
      name = std::string(registry[static_cast<uint8_t>(line[1]) % registry.size()].name);
      value = eq == std::string::npos ? "" : line.substr(eq + 1);
    } else if (eq != std::string::npos) {
      name = line.substr(0, eq);
      value = line.substr(eq + 1);
    } else {
      continue;
    }
    env[name] = value;
  }
  auto first = roce::parse_config(lookup, &env);
  if (!first && first.error().empty()) {
    std::abort();
  }
  auto second = roce::parse_config(lookup, &env);
  if (first.has_value() != second.has_value() || (first && !(*first == *second)) ||
      (!first && first.error() != second.error())) {
    std::abort();
  }
  return 0;
}
