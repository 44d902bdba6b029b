// A registered memory region (ibv_mr), holding its protection domain. Three ways in: plain
// ibv_reg_mr, ibv_reg_mr_iova2 (needed for IBV_ACCESS_RELAXED_ORDERING) and ibv_reg_dmabuf_mr
// (the dma-buf fd is used only during the call; the caller keeps or closes it).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "verbs/protection_domain.h"

namespace roce::verbs {

class MemoryRegion {
 public:
  // Each throws VerbsError naming device, range, access flags and errno (with a hint for the
  // usual causes: ulimit -l for host memory, peermem/dma-buf for GPU memory).
  static std::unique_ptr<MemoryRegion> register_memory(std::shared_ptr<ProtectionDomain> pd,
                                                       void* addr, size_t length, int access);
  // Requires the library's ibv_reg_mr_iova2 (IBVERBS_1.8); throws if it is absent.
  static std::unique_ptr<MemoryRegion> register_iova2(std::shared_ptr<ProtectionDomain> pd,
                                                      void* addr, size_t length, uint64_t iova,
                                                      unsigned access);
  // Requires ibv_reg_dmabuf_mr (IBVERBS_1.12); throws if it is absent.
  static std::unique_ptr<MemoryRegion> register_dmabuf(std::shared_ptr<ProtectionDomain> pd,
                                                       uint64_t offset, size_t length,
                                                       uint64_t iova, int fd, int access);
  ~MemoryRegion();
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  ibv_mr* get() const noexcept { return mr_; }
  uint32_t lkey() const noexcept { return mr_->lkey; }
  uint32_t rkey() const noexcept { return mr_->rkey; }
  const std::shared_ptr<ProtectionDomain>& pd() const noexcept { return pd_; }

 private:
  MemoryRegion(std::shared_ptr<ProtectionDomain> pd, ibv_mr* mr) : pd_(std::move(pd)), mr_(mr) {}

  std::shared_ptr<ProtectionDomain> pd_;
  ibv_mr* mr_;
};

}  // namespace roce::verbs
