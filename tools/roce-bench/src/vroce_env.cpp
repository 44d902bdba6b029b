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
                                 const std::string& ibverbs_lib, int per_rank) {
  const std::size_t needed = static_cast<std::size_t>(nranks) * static_cast<std::size_t>(per_rank);
  if (devices.size() < needed) {
    if (per_rank == 1) {
      throw UsageError(std::to_string(nranks) + " ranks need " + std::to_string(nranks) +
                       " vroce devices (one per rank: vroce serves one process per device), "
                       "but the list has " +
                       std::to_string(devices.size()) + "; add entries to VROCE_DEVICES");
    }
    throw UsageError(std::to_string(nranks) + " ranks with " + std::to_string(per_rank) +
                     " devices each (--vdevice) need " + std::to_string(needed) +
                     " vroce devices (vroce serves one process per device), but the list has " +
                     std::to_string(devices.size()) + "; add entries to VROCE_DEVICES");
  }
  RankEnvironment env;
  env.nccl_ib_hca = "=";
  env.ibverbs_lib = ibverbs_lib;
  for (int i = 0; i < per_rank; ++i) {
    const VroceDevice& d =
        devices[static_cast<std::size_t>(rank) * static_cast<std::size_t>(per_rank) +
                static_cast<std::size_t>(i)];
    const char* sep = i == 0 ? "" : ",";
    env.vroce_devices += sep + d.name + "=" + d.address;
    env.nccl_ib_hca += sep + d.name;
    if (per_rank >= 2 && per_rank <= 8) {  // VROCE_PCI_FUNCTIONS' group size
      env.pci_functions += (i == 0 ? "" : "+") + d.name;
    }
  }
  return env;
}

}  // namespace roce::bench
