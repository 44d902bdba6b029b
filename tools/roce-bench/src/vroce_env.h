// The per-rank environment the launcher gives each rank it starts on this machine: its own vroce
// device (one entry of VROCE_DEVICES, else of vroce's embedded default list), NCCL_IB_HCA naming
// exactly that device, and NCCL_IBVERBS_LIB pointing at the vroce library. Pure, unit-tested.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roce/result.h"

namespace roce::bench {

struct VroceDevice {
  std::string name;
  std::string address;  // IPv4/IPv6 literal or netdev name, as VROCE_DEVICES allows
};

// vroce's default when VROCE_DEVICES is unset: vroce0..vroce7 on 127.0.0.11..127.0.0.18.
std::vector<VroceDevice> default_vroce_devices();

// "vroce0=127.0.0.11,vroce1=127.0.0.12"; malformed text fails naming the entry.
Result<std::vector<VroceDevice>> parse_vroce_devices(std::string_view text);

struct RankEnvironment {
  std::string vroce_devices;  // VROCE_DEVICES for the rank: its one device
  std::string nccl_ib_hca;    // "=<name>": exact match, so vroce1 never also picks vroce10
  std::string ibverbs_lib;    // NCCL_IBVERBS_LIB
};

// Rank `rank`'s environment. Throws UsageError when the list has fewer devices than ranks.
RankEnvironment rank_environment(const std::vector<VroceDevice>& devices, int rank, int nranks,
                                 const std::string& ibverbs_lib);

}  // namespace roce::bench
