// Host memory registered on the device's PD for the plugin's own protocol structures: the
// clear-to-send ring and its staging area, the multi-receive sizes, the flush word. Zeroed and
// page-aligned; deregistered before it is freed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

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

  // The same memory registered on the PD of another member of a virtual NIC, whose QPs read or
  // write it with that registration's keys. Throws verbs::VerbsError.
  void register_also(const std::shared_ptr<verbs::ProtectionDomain>& pd, int access);
  // The keys of registration i: 0 the constructor's, then register_also's in order.
  uint32_t lkey(size_t i) const noexcept { return i == 0 ? lkey() : more_mrs_[i - 1]->lkey(); }
  uint32_t rkey(size_t i) const noexcept { return i == 0 ? rkey() : more_mrs_[i - 1]->rkey(); }

 private:
  void reset() noexcept;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<verbs::MemoryRegion> mr_;
  std::vector<std::unique_ptr<verbs::MemoryRegion>> more_mrs_;
};

}  // namespace roce
