#include "core/memory_access.h"

#include <algorithm>
#include <cstring>

#include "core/ordered_copy.h"
#include "gpu/memory.h"

namespace vroce::core {
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
                         uint64_t offset, uint32_t length, std::span<uint8_t> bounce,
                         DeviceReadAhead* ahead) {
  release();
  uint32_t i = locate(sges, num_sge, &offset);
  uint32_t left = length;
  size_t bounced = 0;
  bool use_bounce = false;
  // Bytes of each piece's SGE from the piece on: what a read-ahead may bring over. Only the
  // first count_ entries are written and read; not zeroed, as this runs for every packet.
  std::array<uint64_t, kMaxPieces> sge_rest;
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
    set_piece(count_, wire::ByteSpan(reinterpret_cast<const uint8_t*>(where), take));
    pin(std::move(ref));
    sge_rest[count_] = sge.length - offset;
    ++count_;
    left -= take;
    offset = 0;
    ++i;
  }
  if (use_bounce) {
    // Device memory is not addressable by the CPU: bring the whole packet's payload over.
    for (size_t p = 0; p < count_; ++p) {
      const wire::ByteSpan& piece = pieces_.at[p];
      const auto where = reinterpret_cast<uint64_t>(piece.data());
      uint8_t* to = bounce.data() + bounced;
      int rc = 0;
      if (pins_.at[p]->kind != gpu::MemoryKind::Cuda) {
        std::memcpy(to, piece.data(), piece.size());
      } else if (ahead != nullptr) {
        rc = ahead->read(where, to, piece.size(), sge_rest[p]);
      } else {
        rc = copy_from_device(where, to, piece.size());
      }
      if (rc != 0) {
        return KeyError::AccessDenied;
      }
      bounced += piece.size();
    }
    set_piece(0, wire::ByteSpan(bounce.data(), bounced));
    count_ = 1;
  }
  return KeyError::None;
}

KeyError Gather::collect_remote(const KeyTable& keys, const Pd* pd, uint32_t rkey, uint64_t va,
                                uint32_t length, std::span<uint8_t> bounce, DeviceReadAhead* ahead,
                                uint64_t rest) {
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
    // Read ahead only as far as the rkey's region reaches: the READ's range was checked a
    // packet at a time, and the region may end before the READ does (then the packet that
    // crosses it is refused on its own).
    const uint64_t in_region = ref->length - (va - ref->iova);
    const uint64_t available = std::max<uint64_t>(length, std::min(rest, in_region));
    int rc = ahead != nullptr ? ahead->read(where, bounce.data(), length, available)
                              : copy_from_device(where, bounce.data(), length);
    if (rc != 0) {
      return KeyError::AccessDenied;
    }
    set_piece(0, wire::ByteSpan(bounce.data(), length));
  } else {
    set_piece(0, wire::ByteSpan(reinterpret_cast<const uint8_t*>(where), length));
  }
  pin(std::move(ref));
  count_ = 1;
  return KeyError::None;
}

namespace {

// Writes CUDA bytes for `owner` through the write queue, or at once without an owner.
KeyError write_device(MrRef ref, uint64_t where, wire::ByteSpan data, Qp* owner) {
  if (owner != nullptr) {
    queue_device_write(*owner, std::move(ref), where, data);
    return KeyError::None;
  }
  return copy_to_device(where, data.data(), data.size()) == 0 ? KeyError::None
                                                              : KeyError::AccessDenied;
}

}  // namespace

KeyError scatter(const KeyTable& keys, const Pd* pd, const ibv_sge* sges, uint32_t num_sge,
                 uint64_t offset, wire::ByteSpan data, Qp* owner) {
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
      if (KeyError e = write_device(std::move(ref), where, data.subspan(done, take), owner);
          e != KeyError::None) {
        return e;
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
                      unsigned access, wire::ByteSpan data, Qp* owner) {
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
    return write_device(std::move(ref), where, data, owner);
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

}  // namespace vroce::core
