// The memory handle regMr gives NCCL: a reference on a cached registration of the device, with
// the keys and range copied in so the data path reads one cache line. The handle names its device
// so a handle used on a comm of another device is refused instead of sending a wrong key.
#pragma once

#include <array>
#include <cstdint>

#include "core/memory/mr_cache.h"
#include "core/recycled_blocks.h"

namespace roce {

class DeviceRuntime;

struct MrHandle {
  static constexpr uint64_t kMagic = 0x726f63652d6d7221ULL;  // "roce-mr!"
  uint64_t magic = kMagic;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  uint64_t addr = 0;  // the registered range (contains what regMr asked for)
  uint64_t length = 0;
  MemoryKind kind = MemoryKind::Host;
  DeviceRuntime* device = nullptr;
  const CachedRegion* region = nullptr;
  // The plugin's device number of the comm it was registered on (a port's or a virtual NIC's);
  // the data path uses a handle only on comms of that number.
  int device_id = -1;
  // A virtual NIC's registration on each member's PD (member 0: lkey, rkey, region above); a
  // member's QPs use that member's keys.
  static constexpr size_t kMaxMembers = 8;
  uint8_t member_count = 1;
  std::array<uint32_t, kMaxMembers> lkeys{};
  std::array<uint32_t, kMaxMembers> rkeys{};
  std::array<const CachedRegion*, kMaxMembers> regions{};
  std::array<DeviceRuntime*, kMaxMembers> devices{};

  // Handles live in recycled blocks, so a deregistered handle keeps reading a zero tag.
  static void* operator new(std::size_t size) { return recycled::allocate(size); }
  static void operator delete(void* block, std::size_t size) noexcept {
    recycled::release(block, size);
  }

  bool valid() const noexcept { return magic == kMagic; }
  bool covers(uint64_t begin, uint64_t size) const noexcept {
    return begin >= addr && size <= length && begin - addr <= length - size;
  }
  // GPU memory the NIC writes into must be flushed before the GPU reads it.
  bool gpu_memory() const noexcept { return kind != MemoryKind::Host; }
};

}  // namespace roce
