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
  std::string vroce_devices;  // VROCE_DEVICES for the rank: its own device(s)
  std::string nccl_ib_hca;    // "=<name>[,<name>...]": exact match, so vroce1 never picks vroce10
  std::string ibverbs_lib;    // NCCL_IBVERBS_LIB
  // VROCE_PCI_FUNCTIONS: with 2..8 devices per rank, "<a>+<b>...": the rank's devices are the
  // functions of one PCI device, as the ports of a dual-port NIC (--vdevice). Empty: not set.
  std::string pci_functions;
  // VROCE_SYSFS_ROOT and NCCL_ROCE_SYSFS_ROOT for the rank (the launcher's --vdevice counters
  // tree). Empty: not set.
  std::string sysfs_root;
};

// Rank `rank`'s environment: `per_rank` consecutive devices of the list (rank r gets entries
// r*per_rank ..). Throws UsageError when the list has fewer than nranks x per_rank devices.
RankEnvironment rank_environment(const std::vector<VroceDevice>& devices, int rank, int nranks,
                                 const std::string& ibverbs_lib, int per_rank = 1);

}  // namespace roce::bench
