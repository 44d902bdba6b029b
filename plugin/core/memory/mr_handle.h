// The memory handle regMr gives NCCL: a reference on a cached registration of the device, with
// the keys and range copied in so the data path reads one cache line. The handle names its device
// so a handle used on a comm of another device is refused instead of sending a wrong key.
#pragma once

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
