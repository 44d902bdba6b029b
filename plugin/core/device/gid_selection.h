// Which GID of a RoCE port the plugin uses. Pure: works on a snapshot of the GID table, so it is
// tested on synthetic tables without a device.
//
// Automatic choice: the first valid RoCEv2 entry of the wanted address family (IPv4-mapped for
// AF_INET) inside NCCL_IB_ADDR_RANGE, skipping zero and link-local (fe80::/10) entries.
// Override (NCCL_IB_GID_INDEX >= 0): taken as given only if the entry is valid, RoCEv2 and of the
// wanted family; otherwise an error that names the entry's type and the index to use instead.
// NCCL_IB_ADDR_RANGE does not apply to an override (as in NCCL). An entry of unknown type is
// accepted only through an override (see GidSelection::type_unknown).
//
// The table may be complete (ibv_query_gid per index, empty slots all-zero) or sparse
// (ibv_query_gid_table, empty slots absent); an index missing from a sparse table is empty.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "roce/result.h"
#include "util/config.h"

namespace roce {

enum class GidType { Unknown, RoceV1, RoceV2, Ib };

struct GidTableEntry {
  int index = 0;
  std::array<uint8_t, 16> gid{};
  GidType type = GidType::Unknown;
};

struct GidSelectionPolicy {
  AddressFamily family = AddressFamily::Ipv4;
  std::string addr_range;  // CIDR ("10.0.0.0/8", "fd00::/8"); empty = any
  int roce_version = 2;
  int override_index = -1;  // NCCL_IB_GID_INDEX; -1 = automatic
  // Only for messages ("on vroce0 port 1"); empty/0 leave the location out.
  std::string device_name;
  int port = 0;
};

struct GidSelection {
  int index = -1;
  GidTableEntry entry;
  // The override named a valid entry of the wanted family whose type could not be read (sysfs
  // gid_attrs hidden in some containers): used as RoCE v2 because the operator asked for it.
  // The caller logs this; a wrong guess is caught when the QP reaches RTR.
  bool type_unknown = false;
  // Set when the override names a link-local GID or one of the other address family: used as
  // given (as NCCL does), and the caller WARNs with this line (what it is, what would be better).
  std::string warning;
};

// Returns the selected entry, or fails with one actionable line (what was wanted, what the table
// holds, which index or setting would work).
Result<GidSelection> select_gid(std::span<const GidTableEntry> table,
                                const GidSelectionPolicy& policy);

// "::ffff:10.0.0.1" / "fe80::1" style text of a GID, for logs.
std::string gid_to_string(const std::array<uint8_t, 16>& gid);
const char* gid_type_name(GidType type);

}  // namespace roce
