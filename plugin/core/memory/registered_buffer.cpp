// RegisteredBuffer: see registered_buffer.h.
#include "core/memory/registered_buffer.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace roce {

RegisteredBuffer::RegisteredBuffer(const std::shared_ptr<verbs::ProtectionDomain>& pd, size_t size,
                                   int access) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = (size + page - 1) / page * page;
  data_ = std::aligned_alloc(page, rounded);
  if (data_ == nullptr) {
    throw std::bad_alloc();
  }
  size_ = rounded;
  std::memset(data_, 0, rounded);
  try {
    mr_ = verbs::MemoryRegion::register_memory(pd, data_, rounded, access);
  } catch (...) {
    std::free(data_);
    data_ = nullptr;
    throw;
  }
}

RegisteredBuffer::~RegisteredBuffer() {
  reset();
}

void RegisteredBuffer::register_also(const std::shared_ptr<verbs::ProtectionDomain>& pd,
                                     int access) {
  more_mrs_.push_back(verbs::MemoryRegion::register_memory(pd, data_, size_, access));
}

RegisteredBuffer::RegisteredBuffer(RegisteredBuffer&& other) noexcept
    : data_(other.data_),
      size_(other.size_),
      mr_(std::move(other.mr_)),
      more_mrs_(std::move(other.more_mrs_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

RegisteredBuffer& RegisteredBuffer::operator=(RegisteredBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    mr_ = std::move(other.mr_);
    more_mrs_ = std::move(other.more_mrs_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void RegisteredBuffer::reset() noexcept {
  more_mrs_.clear();  // deregister before the memory goes
  mr_.reset();
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace roce
