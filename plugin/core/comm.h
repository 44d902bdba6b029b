// What every object handed to NCCL as a comm shares: a type tag checked at the ABI boundary (a
// stale or foreign pointer is reported, not used), the device it lives on, and the comm's
// failure state. The first failure is logged once, with everything an operator needs (the port's
// fabric counters since init among it); every
// later call on the comm returns the same result without logging again.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/device/device_runtime.h"
#include "core/recycled_blocks.h"
#include "nccl_net/types.h"
#include "util/log.h"

namespace roce {

enum class CommKind : uint32_t {
  Listen = 0x6c69736e,  // "lisn"
  Send = 0x73656e64,    // "send"
  Recv = 0x72656376,    // "recv"
};

class Comm {
 public:
  virtual ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  CommKind kind() const noexcept { return kind_; }
  bool valid() const noexcept { return magic_ == kMagic; }
  DeviceRuntime& device() const noexcept { return *device_; }
  const std::shared_ptr<DeviceRuntime>& device_ptr() const noexcept { return device_; }

  bool failed() const noexcept { return failure_ != ncclSuccess; }
  ncclResult_t failure() const noexcept { return failure_; }

  // Records the comm's first failure and logs it (WARN, NET); later calls only return it.
  // Cold and never inlined: the data path calls it from its error branches, and the formatting
  // inlined there would cost the hot path registers and a larger stack frame.
  template <typename... Args>
  [[gnu::cold, gnu::noinline]] ncclResult_t fail(ncclResult_t result,
                                                 fmt::format_string<Args...> format,
                                                 Args&&... args) noexcept {
    if (failure_ == ncclSuccess) {
      failure_ = result;
      ROCE_WARN(NCCL_NET, "{} comm on {}: {}{}", kind_name(), device_->name(),
                fmt::format(format, std::forward<Args>(args)...), fabric_context());
    }
    return failure_;
  }

  const char* kind_name() const noexcept;

  // For a send or recv comm's failure: "; fabric counters on ... since init: ..." (loss or
  // congestion the port counted), or "" when the counters are not readable.
  std::string fabric_context() const noexcept;

  // Comms live in recycled blocks, so a closed comm's address keeps reading a zero tag.
  static void* operator new(std::size_t size) { return recycled::allocate(size); }
  static void operator delete(void* block, std::size_t size) noexcept {
    recycled::release(block, size);
  }

  // The Comm behind a pointer NCCL gave back, if it is one of ours (of that kind), else nullptr.
  // Inline: isend and irecv ask on every call. The live mark first: a closed comm is a dead
  // object, not to be called even to read its tag.
  static Comm* from_any_handle(void* handle) noexcept {
    if (handle == nullptr || !recycled::is_live(handle)) [[unlikely]] {
      return nullptr;
    }
    auto* comm = static_cast<Comm*>(handle);
    return comm->valid() ? comm : nullptr;
  }
  static Comm* from_handle(void* handle, CommKind kind) noexcept {
    Comm* comm = from_any_handle(handle);
    return comm != nullptr && comm->kind() == kind ? comm : nullptr;
  }

 protected:
  Comm(CommKind kind, std::shared_ptr<DeviceRuntime> device)
      : kind_(kind), device_(std::move(device)) {}

 private:
  static constexpr uint64_t kMagic = 0x726f63652d636f6dULL;  // "roce-com"
  uint64_t magic_ = kMagic;
  CommKind kind_;
  std::shared_ptr<DeviceRuntime> device_;
  ncclResult_t failure_ = ncclSuccess;
};

}  // namespace roce
