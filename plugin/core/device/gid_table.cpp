// GID table snapshots: see gid_table.h.
#include "core/device/gid_table.h"

#include <cerrno>
#include <cstring>

#include "core/device/sysfs.h"
#include "util/log.h"
#include "verbs/error.h"

namespace roce {
namespace {

GidType from_verbs_type(uint32_t type) noexcept {
  switch (type) {
    case IBV_GID_TYPE_IB:
      return GidType::Ib;
    case IBV_GID_TYPE_ROCE_V1:
      return GidType::RoceV1;
    case IBV_GID_TYPE_ROCE_V2:
      return GidType::RoceV2;
    default:
      return GidType::Unknown;
  }
}

}  // namespace

std::vector<GidTableEntry> read_gid_table(const verbs::Context& context, int port, int table_length,
                                          const std::string& sysfs_root) {
  const ibv::Functions& fn = context.lib().fn();
  std::vector<GidTableEntry> table;
  table.reserve(static_cast<size_t>(table_length > 0 ? table_length : 0));
  bool use_gid_ex = fn.query_gid_ex != nullptr;
  for (int index = 0; index < table_length; ++index) {
    GidTableEntry entry;
    entry.index = index;
    if (use_gid_ex) {
      ibv_gid_entry ex{};
      errno = 0;
      const int err =
          verbs::verbs_errno(fn.query_gid_ex(context.get(), static_cast<uint32_t>(port),
                                             static_cast<uint32_t>(index), &ex, 0, sizeof(ex)));
      if (err == 0) {
        std::memcpy(entry.gid.data(), ex.gid.raw, entry.gid.size());
        entry.type = from_verbs_type(ex.gid_type);
        table.push_back(entry);
        continue;
      }
      if (err == ENODATA) {  // an empty slot: zero GID, no type
        table.push_back(entry);
        continue;
      }
      // The library has the symbol but the provider cannot answer: sysfs for this and the rest.
      ROCE_INFO(NCCL_INIT,
                "dev {} port {}: _ibv_query_gid_ex failed ({}); reading GID types "
                "from sysfs",
                context.name(), port, verbs::errno_text(err));
      use_gid_ex = false;
    }
    ibv_gid gid{};
    errno = 0;
    const int err =
        verbs::verbs_errno(fn.query_gid(context.get(), static_cast<uint8_t>(port), index, &gid));
    if (err != 0) {
      ROCE_INFO(NCCL_INIT, "dev {} port {}: ibv_query_gid index {} failed ({}); treated as empty",
                context.name(), port, index, verbs::errno_text(err));
      table.push_back(entry);
      continue;
    }
    std::memcpy(entry.gid.data(), gid.raw, entry.gid.size());
    entry.type = sysfs::read_gid_type(sysfs_root, context.name(), port, index);
    table.push_back(entry);
  }
  return table;
}

}  // namespace roce
