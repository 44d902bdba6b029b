#include "transport/memory_access.h"

#include <algorithm>
#include <cstring>

#include "gpu/memory.h"
#include "transport/ordered_copy.h"

namespace vroce::transport {
namespace {

// Finds the SGE holding message byte `offset`; returns num_sge when past the end.
uint32_t locate(const ibv_sge* sges, uint32_t num_sge, uint64_t* offset) {
  uint32_t i = 0;
  while (i < num_sge && *offset >= sges[i].length) {
    *offset -= sges[i].length;
    ++i;
  }
  return i;
}

}  // namespace

KeyError Gather::collect(const KeyTable& keys, const Pd* pd, const ibv_sge* sges, uint32_t num_sge,
                         uint64_t offset, uint32_t length, std::span<uint8_t> bounce) {
  release();
  uint32_t i = locate(sges, num_sge, &offset);
  uint32_t left = length;
  size_t bounced = 0;
  bool use_bounce = false;
  while (left > 0) {
    if (i >= num_sge || count_ == kMaxPieces) {
      return KeyError::OutOfBounds;
    }
    const ibv_sge& sge = sges[i];
    auto take = static_cast<uint32_t>(std::min<uint64_t>(left, sge.length - offset));
    KeyError error;
    MrRef ref = keys.lookup(sge.lkey, pd, sge.addr + offset, take, 0, &error);
    if (!ref) {
      return error;
    }
    uint64_t where = ref->locate(sge.addr + offset);
    if (ref->kind == gpu::MemoryKind::Cuda) {
      use_bounce = true;
    }
    pieces_[count_] = wire::ByteSpan(reinterpret_cast<const uint8_t*>(where), take);
    pins_[count_] = std::move(ref);
    ++count_;
    left -= take;
    offset = 0;
    ++i;
  }
  if (use_bounce) {
    // Device memory is not addressable by the CPU: bring the whole packet's payload over.
    for (size_t p = 0; p < count_; ++p) {
      const wire::ByteSpan& piece = pieces_[p];
      Mr* mr = pins_[p].get();
      int rc = mr->kind == gpu::MemoryKind::Cuda
                   ? gpu::copy_from_region(gpu::MemoryKind::Cuda,
                                           reinterpret_cast<uint64_t>(piece.data()),
                                           bounce.data() + bounced, piece.size())
                   : (std::memcpy(bounce.data() + bounced, piece.data(), piece.size()), 0);
      if (rc != 0) {
        return KeyError::AccessDenied;
      }
      bounced += piece.size();
    }
    pieces_[0] = wire::ByteSpan(bounce.data(), bounced);
    count_ = 1;
  }
  return KeyError::None;
}

KeyError Gather::collect_remote(const KeyTable& keys, const Pd* pd, uint32_t rkey, uint64_t va,
                                uint32_t length, std::span<uint8_t> bounce) {
  release();
  if (length == 0) {
    return KeyError::None;
  }
  KeyError error;
  MrRef ref = keys.lookup(rkey, pd, va, length, IBV_ACCESS_REMOTE_READ, &error);
  if (!ref) {
    return error;
  }
  uint64_t where = ref->locate(va);
  if (ref->kind == gpu::MemoryKind::Cuda) {
    if (gpu::copy_from_region(gpu::MemoryKind::Cuda, where, bounce.data(), length) != 0) {
      return KeyError::AccessDenied;
    }
    pieces_[0] = wire::ByteSpan(bounce.data(), length);
  } else {
    pieces_[0] = wire::ByteSpan(reinterpret_cast<const uint8_t*>(where), length);
  }
  pins_[0] = std::move(ref);
  count_ = 1;
  return KeyError::None;
}

KeyError scatter(const KeyTable& keys, const Pd* pd, const ibv_sge* sges, uint32_t num_sge,
                 uint64_t offset, wire::ByteSpan data) {
  uint32_t i = locate(sges, num_sge, &offset);
  size_t done = 0;
  while (done < data.size()) {
    if (i >= num_sge) {
      return KeyError::OutOfBounds;
    }
    const ibv_sge& sge = sges[i];
    auto take = static_cast<size_t>(std::min<uint64_t>(data.size() - done, sge.length - offset));
    KeyError error;
    MrRef ref = keys.lookup(sge.lkey, pd, sge.addr + offset, take, IBV_ACCESS_LOCAL_WRITE, &error);
    if (!ref) {
      return error;
    }
    uint64_t where = ref->locate(sge.addr + offset);
    if (ref->kind == gpu::MemoryKind::Cuda) {
      if (gpu::copy_to_region(gpu::MemoryKind::Cuda, where, data.data() + done, take) != 0) {
        return KeyError::AccessDenied;
      }
    } else {
      // Each piece in address order, its last aligned word released (ordered_copy.h): this also
      // serves READ responses landing in the requester's SGEs.
      ordered_copy(reinterpret_cast<void*>(where), data.data() + done, take);
    }
    done += take;
    offset = 0;
    ++i;
  }
  return KeyError::None;
}

KeyError place_remote(const KeyTable& keys, const Pd* pd, uint32_t rkey, uint64_t va,
                      unsigned access, wire::ByteSpan data) {
  if (data.empty()) {
    return KeyError::None;
  }
  KeyError error;
  MrRef ref = keys.lookup(rkey, pd, va, data.size(), access, &error);
  if (!ref) {
    return error;
  }
  uint64_t where = ref->locate(va);
  if (ref->kind == gpu::MemoryKind::Cuda) {
    return gpu::copy_to_region(gpu::MemoryKind::Cuda, where, data.data(), data.size()) == 0
               ? KeyError::None
               : KeyError::AccessDenied;
  }
  ordered_copy(reinterpret_cast<void*>(where), data.data(), data.size());
  return KeyError::None;
}

KeyError check_sges(const KeyTable& keys, const Pd* pd, const ibv_sge* sges, uint32_t num_sge,
                    unsigned access) {
  for (uint32_t i = 0; i < num_sge; ++i) {
    if (sges[i].length == 0) {
      continue;  // a zero-length SGE names no memory
    }
    KeyError error;
    MrRef ref = keys.lookup(sges[i].lkey, pd, sges[i].addr, sges[i].length, access, &error);
    if (!ref) {
      return error;
    }
  }
  return KeyError::None;
}

}  // namespace vroce::transport
