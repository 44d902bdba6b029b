// NCCL_IB_HCA with NCCL's meaning: a comma-separated list of entries; a leading '^' excludes
// (and is parsed before '='), a leading '=' asks for exact name matches (otherwise an entry is a
// prefix), and ":<port>" limits an entry to one port. NCCL 2.30's ":<port>:<rail>:<plane>" is
// accepted: rail and plane are NCCL's grouping of NICs, kept for the log, not for matching (the
// plugin reports each port as its own device). Empty entries are skipped, as NCCL's tokenizer
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
  std::optional<int> port;  // nullopt: any port
  std::optional<int> rail;  // NCCL 2.30 name:port:rail:plane; not used for matching
  std::optional<int> plane;
};

struct HcaFilter {
  bool exclude = false;  // '^': the entries name what NOT to use
  bool exact = false;    // '=': whole-name match instead of prefix
  std::vector<HcaEntry> entries;

  // True when device `name`, port `port` may be used.
  bool matches(std::string_view name, int port) const;
  // True when `name` may be used on any port (NCCL_SOCKET_IFNAME: interfaces have no ports).
  bool matches_name(std::string_view name) const;
};

// Parses the variable's value. Malformed input (empty entry, bad port number) fails with a line
// naming the offending entry.
Result<HcaFilter> parse_hca_filter(std::string_view text);

}  // namespace roce
