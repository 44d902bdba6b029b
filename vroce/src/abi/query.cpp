// Device, port, GID and P_Key queries, with rdma-core 44's return conventions: ibv_query_device
// and ibv_query_port return an errno value; ibv_query_gid, ibv_query_pkey and
// ibv_query_gid_type return -1 with errno set; _ibv_query_gid_ex returns an errno value (ENODATA
// for an empty slot) and _ibv_query_gid_table a count or a negated errno value.
#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "abi/export.h"
#include "abi/private_decls.h"
#include "abi/query_ops.h"
#include "device/context.h"
#include "device/device.h"
#include "device/limits.h"

// verbs.h turns ibv_query_port into a macro for the inline that prefers the extended op; the
// exported function of that name is the compat entry point defined below.
#undef ibv_query_port

namespace vroce::abi {
namespace {

// The layout before rdma-core added port_cap_flags2: what the exported ibv_query_port writes.
constexpr size_t kCompatPortAttrSize = offsetof(ibv_port_attr, port_cap_flags2);
static_assert(kCompatPortAttrSize == 48);

device::Device* device_of(ibv_context* context) {
  return context == nullptr ? nullptr : device::to_context(context)->device;
}

// The GID entry at (port, index), or nullptr when either is out of range.
const device::GidEntry* gid_slot(ibv_context* context, uint32_t port_num, uint64_t index) {
  device::Device* device = device_of(context);
  if (device == nullptr || port_num != device::limits::kPortNum || index >= device->gids().size()) {
    return nullptr;
  }
  return &device->gids()[index];
}

ibv_gid_entry make_entry(const device::GidEntry& slot, uint32_t index) {
  ibv_gid_entry entry{};
  entry.gid = slot.gid;
  entry.gid_index = index;
  entry.port_num = device::limits::kPortNum;
  entry.gid_type = slot.type;
  entry.ndev_ifindex = static_cast<uint32_t>(slot.ndev_ifindex);
  return entry;
}

}  // namespace

int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* port_attr,
               size_t port_attr_len) {
  device::Device* device = device_of(context);
  if (device == nullptr || port_attr == nullptr || port_num != device::limits::kPortNum ||
      port_attr_len < kCompatPortAttrSize) {
    return EINVAL;
  }
  device->refresh_netdev_mtu();
  ibv_port_attr full = device->port_attr();
  size_t copied = std::min(port_attr_len, sizeof(full));
  std::memcpy(port_attr, &full, copied);
  if (port_attr_len > copied) {
    std::memset(reinterpret_cast<char*>(port_attr) + copied, 0, port_attr_len - copied);
  }
  return 0;
}

int query_device(ibv_context* context, ibv_device_attr* device_attr) {
  device::Device* device = device_of(context);
  if (device == nullptr || device_attr == nullptr) {
    return EINVAL;
  }
  *device_attr = device->device_attr();
  return 0;
}

int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) {
  device::Device* device = device_of(context);
  if (device == nullptr || attr == nullptr || (input != nullptr && input->comp_mask != 0) ||
      attr_size < sizeof(ibv_device_attr)) {
    return EINVAL;
  }
  // vroce has no ODP, timestamps, TSO, RSS, tag matching, CQ moderation or device memory:
  // every extended capability is zero, which is how a device says "not supported".
  ibv_device_attr_ex full{};
  full.orig_attr = device->device_attr();
  full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
  size_t copied = std::min(attr_size, sizeof(full));
  std::memcpy(attr, &full, copied);
  if (attr_size > copied) {
    std::memset(reinterpret_cast<char*>(attr) + copied, 0, attr_size - copied);
  }
  return 0;
}

}  // namespace vroce::abi

using vroce::abi::gid_slot;
using vroce::device::GidEntry;

VROCE_EXPORT int ibv_query_device(ibv_context* context, ibv_device_attr* device_attr) {
  return vroce::abi::query_device(context, device_attr);
}

// The exported symbol takes the 48-byte _compat_ibv_port_attr, as rdma-core's does: programs
// that dlsym it (NCCL) pass a full struct, and the 4 bytes after the compat layout are theirs.
VROCE_EXPORT int ibv_query_port(ibv_context* context, uint8_t port_num,
                                _compat_ibv_port_attr* port_attr) {
  return vroce::abi::query_port(context, port_num, reinterpret_cast<ibv_port_attr*>(port_attr),
                                vroce::abi::kCompatPortAttrSize);
}

VROCE_EXPORT int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
  const GidEntry* slot =
      index < 0 ? nullptr : gid_slot(context, port_num, static_cast<uint64_t>(index));
  if (slot == nullptr || gid == nullptr) {
    errno = EINVAL;
    return -1;
  }
  // An empty slot reads as the zero GID, not an error: rdma-core keeps that old behaviour.
  *gid = slot->valid ? slot->gid : ibv_gid{};
  return 0;
}

VROCE_EXPORT int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index,
                                   ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
  const GidEntry* slot = gid_slot(context, port_num, gid_index);
  if (slot == nullptr || entry == nullptr || flags != 0 || entry_size < sizeof(ibv_gid_entry)) {
    return EINVAL;
  }
  if (!slot->valid) {
    return ENODATA;
  }
  std::memset(entry, 0, entry_size);
  ibv_gid_entry filled = vroce::abi::make_entry(*slot, gid_index);
  std::memcpy(entry, &filled, sizeof(filled));
  return 0;
}

VROCE_EXPORT ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries,
                                          size_t max_entries, uint32_t flags, size_t entry_size) {
  vroce::device::Device* device = vroce::abi::device_of(context);
  if (device == nullptr || flags != 0 || entry_size < sizeof(ibv_gid_entry) ||
      (entries == nullptr && max_entries != 0)) {
    return -EINVAL;
  }
  std::span<const GidEntry> gids = device->gids();
  size_t count = 0;
  for (size_t i = 0; i < gids.size(); ++i) {
    if (!gids[i].valid) {
      continue;
    }
    if (count == max_entries) {
      return -EINVAL;  // the caller's array is too small for the table
    }
    auto* slot = reinterpret_cast<char*>(entries) + count * entry_size;
    std::memset(slot, 0, entry_size);
    ibv_gid_entry filled = vroce::abi::make_entry(gids[i], static_cast<uint32_t>(i));
    std::memcpy(slot, &filled, sizeof(filled));
    ++count;
  }
  return static_cast<ssize_t>(count);
}

VROCE_EXPORT int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index,
                                    ibv_gid_type_sysfs* type) {
  const GidEntry* slot = gid_slot(context, port_num, index);
  if (slot == nullptr || type == nullptr) {
    errno = EINVAL;
    return -1;
  }
  // An empty slot reports v1 with success, as rdma-core does for compatibility.
  *type = slot->valid && slot->type == IBV_GID_TYPE_ROCE_V2 ? IBV_GID_TYPE_SYSFS_ROCE_V2
                                                            : IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
  return 0;
}

VROCE_EXPORT int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  if (vroce::abi::device_of(context) == nullptr || port_num != vroce::device::limits::kPortNum ||
      index < 0 || index >= vroce::device::limits::kMaxPkeys || pkey == nullptr) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htobe16(0xffff);  // the default partition, full membership: all RoCE has
  return 0;
}

VROCE_EXPORT int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  for (int index = 0;; ++index) {
    __be16 entry = 0;
    if (ibv_query_pkey(context, port_num, index, &entry) != 0) {
      if (index > 0) {
        errno = ENOENT;  // the table was walked without a match
      }
      return -1;
    }
    if (entry == pkey) {
      return index;
    }
  }
}
