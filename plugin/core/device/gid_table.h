// A snapshot of one port's GID table: every index 0..gid_tbl_len-1 (empty slots all-zero), with
// its type from _ibv_query_gid_ex when the library has it, else from sysfs
// (ports/<p>/gid_attrs/types/<i>), else Unknown (containers that hide gid_attrs).
#pragma once

#include <string>
#include <vector>

#include "core/device/gid_selection.h"
#include "verbs/context.h"

namespace roce {

std::vector<GidTableEntry> read_gid_table(const verbs::Context& context, int port, int table_length,
                                          const std::string& sysfs_root);

}  // namespace roce
