// A registered memory region: where its bytes live (host memory, a mapped dma-buf, or CUDA device
// memory), the IOVA range local SGEs and remote peers address it by, and its access rights.
// Its key and the pins that let ibv_dereg_mr wait out in-flight copies live in core/key_table.h.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "gpu/memory.h"

namespace vroce::core {

struct Pd;

struct Mr {
  ibv_mr ibv{};  // first member: users hold &ibv
  Pd* pd = nullptr;
  uint64_t iova = 0;  // the address SGEs and RETHs use for the first byte
  uint64_t length = 0;
  uint64_t region_addr = 0;  // where the first byte is: a host pointer or a CUDA device pointer
  gpu::MemoryKind kind = gpu::MemoryKind::Host;
  unsigned access = 0;      // IBV_ACCESS_* without the optional bits
  void* mapping = nullptr;  // mmap of a dma-buf, unmapped at deregistration
  size_t mapping_length = 0;
  uint32_t slot = 0;  // index in the device's key table

  // True when [addr, addr + len) lies inside the region (addr in IOVA space).
  bool covers(uint64_t addr, uint64_t len) const noexcept {
    return addr >= iova && len <= length && addr - iova <= length - len;
  }
  // Where IOVA `addr` lives (after covers() said yes).
  uint64_t locate(uint64_t addr) const noexcept { return region_addr + (addr - iova); }
};

inline Mr* to_mr(ibv_mr* mr) noexcept {
  return reinterpret_cast<Mr*>(mr);
}

}  // namespace vroce::core
