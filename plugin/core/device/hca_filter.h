// NCCL_IB_HCA with NCCL's meaning: a comma-separated list of entries; a leading '^' excludes
// (and is parsed before '='), a leading '=' asks for exact name matches (otherwise an entry is a
// prefix), and ":<port>" limits an entry to one port. NCCL 2.30's ":<port>:<rail>:<plane>"
// gives the devices an entry selects their rail and plane (reported in ncclNet v12's
// properties; not used for matching). An empty field leaves its value unset, as in NCCL
// ("mlx5_0:" and "=mlx5_0::0:0" are any port). Empty entries are skipped, as NCCL's tokenizer
// skips them. Empty or unset: every device and port.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roce/result.h"

namespace roce {

struct HcaEntry {
  std::string name;
  std::optional<int> port;   // nullopt: any port
  std::optional<int> rail;   // NCCL 2.30 name:port:rail:plane; not used for matching
  std::optional<int> plane;  // nullopt: not given (NCCL_NET_ID_UNDEF)
};

struct HcaFilter {
  bool exclude = false;  // '^': the entries name what NOT to use
  bool exact = false;    // '=': whole-name match instead of prefix
  std::vector<HcaEntry> entries;

  // True when device `name`, port `port` may be used.
  bool matches(std::string_view name, int port) const;
  // The entry that selects device `name`, port `port`: the first that names it in a list that
  // is not '^' (as NCCL takes rail and plane from it); nullptr otherwise.
  const HcaEntry* selecting_entry(std::string_view name, int port) const;
  // True when `name` may be used on any port (NCCL_SOCKET_IFNAME: interfaces have no ports).
  bool matches_name(std::string_view name) const;
};

// Parses the variable's value. Malformed input (an entry with no name, a port that is not a
// number in 1..255, a rail or plane not in 0..32767) fails with a line naming the offending
// entry, where NCCL would select nothing or every device.
Result<HcaFilter> parse_hca_filter(std::string_view text);

}  // namespace roce
