// Host memory registered on the device's PD for the plugin's own protocol structures: the
// clear-to-send ring and its staging area, the multi-receive sizes, the flush word. Zeroed and
// page-aligned; deregistered before it is freed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "verbs/memory_region.h"
#include "verbs/protection_domain.h"

namespace roce {

class RegisteredBuffer {
 public:
  RegisteredBuffer() = default;
  // Zeroed, page-aligned. Throws std::bad_alloc or verbs::VerbsError.
  RegisteredBuffer(const std::shared_ptr<verbs::ProtectionDomain>& pd, size_t size, int access);
  ~RegisteredBuffer();
  RegisteredBuffer(RegisteredBuffer&& other) noexcept;
  RegisteredBuffer& operator=(RegisteredBuffer&& other) noexcept;

  void* data() const noexcept { return data_; }
  uint64_t addr() const noexcept { return reinterpret_cast<uintptr_t>(data_); }
  size_t size() const noexcept { return size_; }
  uint32_t lkey() const noexcept { return mr_->lkey(); }
  uint32_t rkey() const noexcept { return mr_->rkey(); }

 private:
  void reset() noexcept;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<verbs::MemoryRegion> mr_;
};

}  // namespace roce
