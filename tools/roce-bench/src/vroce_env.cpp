// Per-rank vroce environment.
#include "vroce_env.h"

#include "errors.h"

namespace roce::bench {

std::vector<VroceDevice> default_vroce_devices() {
  std::vector<VroceDevice> devices;
  devices.reserve(8);
  for (int i = 0; i < 8; ++i) {
    devices.push_back({"vroce" + std::to_string(i), "127.0.0." + std::to_string(11 + i)});
  }
  return devices;
}

Result<std::vector<VroceDevice>> parse_vroce_devices(std::string_view text) {
  std::vector<VroceDevice> devices;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string_view entry = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const std::size_t eq = entry.find('=');
    if (entry.empty() || eq == std::string_view::npos || eq == 0 || eq + 1 == entry.size()) {
      return failure("VROCE_DEVICES entry '" + std::string(entry) +
                     "': expected name=address (e.g. vroce0=127.0.0.11)");
    }
    const std::string name(entry.substr(0, eq));
    for (const auto& d : devices) {
      if (d.name == name) {
        return failure("VROCE_DEVICES names " + name + " twice");
      }
    }
    devices.push_back({name, std::string(entry.substr(eq + 1))});
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return devices;
}

RankEnvironment rank_environment(const std::vector<VroceDevice>& devices, int rank, int nranks,
                                 const std::string& ibverbs_lib) {
  if (static_cast<int>(devices.size()) < nranks) {
    throw UsageError(std::to_string(nranks) + " ranks need " + std::to_string(nranks) +
                     " vroce devices (one per rank: vroce serves one process per device), but "
                     "the list has " +
                     std::to_string(devices.size()) + "; add entries to VROCE_DEVICES");
  }
  const VroceDevice& d = devices[static_cast<std::size_t>(rank)];
  return {d.name + "=" + d.address, "=" + d.name, ibverbs_lib};
}

}  // namespace roce::bench
