// Host-level traffic-class overrides. mlx5 (MLNX_OFED) exposes
// <sysfs>/class/infiniband/<dev>/tc/<port>/traffic_class: writing a class there makes the driver
// apply it to every RoCE QP of the port whatever the QP asked for; reading shows
// "Global tclass=<n>" when that is set, followed by one line per address rule
// ("src_ip=..,dst_ip=../<len>,tclass=<n>", the IPv6 forms with src_ip6=/dst_ip6=), which apply to
// QPs whose addresses match when no global class is set. An empty file means no override.
//
// The plugin reports what it finds so the core can refuse to run when the class it was told to
// use differs (the issue users meet: NVIDIA/nccl#2383). The parser is pure and unit-tested.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roce/result.h"

namespace roce {

struct TcOverrideRule {
  std::string match;  // the rule without its class: "src_ip=10.0.0.1,dst_ip=10.0.0.0/8"
  int traffic_class = 0;
};

struct TcOverride {
  std::string file;                 // where it was read
  std::optional<int> global_class;  // "Global tclass=N"
  std::vector<TcOverrideRule> rules;

  bool any() const noexcept { return global_class.has_value() || !rules.empty(); }
};

// Parses the file's contents. A line that is neither form, or a class outside 0..255, fails
// naming the line (an override we cannot read is not assumed absent).
Result<TcOverride> parse_tc_override(std::string_view content);

// Reads <root>/class/infiniband/<device>/tc/<port>/traffic_class. std::nullopt when the file does
// not exist (no such driver feature); fails when it exists but cannot be read or parsed, naming
// the file.
Result<std::optional<TcOverride>> read_tc_override(const std::string& root,
                                                   const std::string& device, int port);

// Fails when the override would make packets leave with a class other than `requested`: one
// line naming the file, its class and the requested one, and how to fix it. A global class
// decides for every QP; rules only for matching addresses, so they are reported as a possible
// rewrite. `setting` is what the fix suggests configuring instead (NCCL_IB_FIFO_TC for that
// class).
Status check_tc_override(const TcOverride& override_info, int requested,
                         std::string_view setting = "NCCL_ROCE_TC");

}  // namespace roce
