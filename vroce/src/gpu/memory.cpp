// Memory classification and copies for host and CUDA device memory; see gpu/memory.h.
#include "gpu/memory.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

#include "config/config.h"
#include "gpu/copy_helper.h"
#include "gpu/cuda_driver.h"
#include "gpu/driver_lock_hazard.h"
#include "util/log.h"

namespace vroce::gpu {
namespace {

struct PointerInfo {
  unsigned int memory_type = 0;  // 0 when CUDA does not know the address
  int device_ordinal = -1;
  cuda::CUdeviceptr range_start = 0;
  size_t range_size = 0;
  cuda::CUcontext context = nullptr;
};

// cuPointerGetAttributes, unlike cuPointerGetAttribute, succeeds for addresses CUDA does not
// know and reports them with memory type 0, so plain host memory costs no error path.
bool query_pointer(const CudaDriver& driver, uint64_t addr, PointerInfo* info) {
  int attributes[] = {cuda::kPointerAttributeMemoryType, cuda::kPointerAttributeDeviceOrdinal,
                      cuda::kPointerAttributeRangeStartAddr, cuda::kPointerAttributeRangeSize,
                      cuda::kPointerAttributeContext};
  void* data[] = {&info->memory_type, &info->device_ordinal, &info->range_start, &info->range_size,
                  &info->context};
  return driver.pointer_get_attributes(5, attributes, data, addr) == cuda::kSuccess;
}

bool covers(const PointerInfo& info, uint64_t addr, size_t length) {
  return info.memory_type == cuda::kMemoryTypeDevice && addr >= info.range_start &&
         length <= info.range_size && addr - info.range_start <= info.range_size - length;
}

void log_copy_failure_once(const CudaDriver& driver, const char* what, cuda::CUresult rc) {
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) {
    VROCE_LOG(Error, "CUDA %s failed with %s (further failures are not logged)", what,
              driver.error_text(rc).c_str());
  }
}

int errno_for(cuda::CUresult rc) {
  return rc == cuda::kErrorInvalidValue ? EFAULT : EIO;
}

// The device's primary context, retained once per device for the life of the process (each
// retain takes a reference, so retaining per copy would leak them).
cuda::CUresult primary_context(const CudaDriver& driver, int ordinal, cuda::CUcontext* ctx) {
  static std::mutex mutex;
  static std::map<int, cuda::CUcontext> retained;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = retained.find(ordinal); it != retained.end()) {
    *ctx = it->second;
    return cuda::kSuccess;
  }
  cuda::CUdevice device = 0;
  cuda::CUresult rc = driver.device_get(&device, ordinal);
  if (rc == cuda::kSuccess) {
    rc = driver.primary_ctx_retain(ctx, device);
  }
  if (rc == cuda::kSuccess) {
    retained.emplace(ordinal, *ctx);
  }
  return rc;
}

// What vroce copies through in one context: a stream and a page-locked staging buffer of its own,
// used by one copy at a time. Both choices keep vroce's copies independent of the application's
// CUDA work, as a NIC's DMA engine is:
// - The synchronous copies (cuMemcpyHtoD and friends) run on the legacy default stream, which
//   waits for the application's work on it; PyTorch queues there a wait for NCCL's kernel, which
//   waits for the data vroce is delivering. A non-blocking stream orders only against itself.
// - A copy from pageable memory goes through the driver's shared staging buffers, which an
//   application thread's own pageable copy (PyTorch's .item() after a collective) can hold while
//   it waits for NCCL's kernel. From page-locked memory the copy engine reads directly.
// Both deadlocks were seen on H200s as a peer QP exhausting its retries mid-run.
struct CopyEngine {
  std::mutex mutex;  // one copy at a time owns the staging buffer
  cuda::CUstream stream = nullptr;
  uint8_t* staging = nullptr;
};
constexpr size_t kStagingBytes = size_t{1} << 20;

// The copy engine of `context` (which must be current), created on first use and kept for the
// life of the process.
cuda::CUresult copy_engine(const CudaDriver& driver, cuda::CUcontext context, CopyEngine** engine) {
  static std::mutex mutex;
  // Never destroyed, nor are the engines: a copy may race process exit. Held through a pointer so
  // that the engines stay reachable (no leak report) after static destructors have run.
  static auto* engines = new std::map<cuda::CUcontext, CopyEngine*>;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = engines->find(context); it != engines->end()) {
    *engine = it->second;
    return cuda::kSuccess;
  }
  auto* created = new (std::nothrow) CopyEngine;
  if (created == nullptr) {
    return cuda::kErrorInvalidValue;
  }
  void* staging = nullptr;
  cuda::CUresult rc = driver.stream_create(&created->stream, cuda::kStreamNonBlocking);
  if (rc == cuda::kSuccess) {
    rc = driver.mem_alloc_host(&staging, kStagingBytes);
  }
  if (rc != cuda::kSuccess) {
    delete created;  // a created stream leaks: harmless, and this path means CUDA is failing
    return rc;
  }
  created->staging = static_cast<uint8_t*>(staging);
  try {
    engines->emplace(context, created);
  } catch (...) {
    return cuda::kErrorInvalidValue;  // out of memory for the map entry
  }
  *engine = created;
  return cuda::kSuccess;
}

// Makes the context that owns addr current on this thread for one driver call and restores the
// caller's afterwards, so copies from an application thread leave its CUDA state untouched.
class ScopedContext {
 public:
  ScopedContext(const CudaDriver& driver, uint64_t addr) : driver_(driver) {
    PointerInfo info;
    if (!query_pointer(driver, addr, &info) || info.memory_type != cuda::kMemoryTypeDevice) {
      result_ = cuda::kErrorInvalidValue;
      return;
    }
    cuda::CUcontext target = info.context;
    if (target == nullptr) {
      // Virtual-memory-management allocations belong to no context: use the device's primary.
      try {
        result_ = primary_context(driver, info.device_ordinal, &target);
      } catch (...) {
        result_ = cuda::kErrorInvalidValue;  // out of memory for the cache entry
      }
      if (result_ != cuda::kSuccess) {
        return;
      }
    }
    result_ = driver.ctx_get_current(&previous_);
    if (result_ == cuda::kSuccess && previous_ != target) {
      result_ = driver.ctx_set_current(target);
      switched_ = result_ == cuda::kSuccess;
    }
    if (result_ == cuda::kSuccess) {
      result_ = copy_engine(driver, target, &engine_);
    }
  }
  ~ScopedContext() {
    if (switched_) {
      driver_.ctx_set_current(previous_);
    }
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

  cuda::CUresult result() const { return result_; }
  // vroce's copy engine in that context (valid when result() is kSuccess).
  CopyEngine& engine() const { return *engine_; }

 private:
  const CudaDriver& driver_;
  cuda::CUcontext previous_ = nullptr;
  CopyEngine* engine_ = nullptr;
  cuda::CUresult result_ = cuda::kSuccess;
  bool switched_ = false;
};

}  // namespace

MemoryKind classify(const void* addr, size_t length) noexcept {
  return is_device_range(reinterpret_cast<uint64_t>(addr), length) ? MemoryKind::Cuda
                                                                   : MemoryKind::Host;
}

bool is_device_range(uint64_t addr, size_t length) noexcept {
  const CudaDriver* driver = cuda_driver();
  PointerInfo info;
  return driver != nullptr && query_pointer(*driver, addr, &info) && covers(info, addr, length);
}

bool is_device_pointer(uint64_t addr) noexcept {
  const CudaDriver* driver = cuda_driver();
  PointerInfo info;
  return driver != nullptr && query_pointer(*driver, addr, &info) &&
         info.memory_type == cuda::kMemoryTypeDevice;
}

int attach_device_range(uint64_t addr, size_t length) noexcept {
  if (!config().gpu_copies_by_helper) {
    return 0;
  }
  const CudaDriver* driver = cuda_driver();
  if (driver == nullptr) {
    return ENODEV;
  }
  PointerInfo info;
  if (!query_pointer(*driver, addr, &info) || !covers(info, addr, length)) {
    return EFAULT;
  }
  return helper::attach(addr, {info.range_start, info.range_size, info.device_ordinal});
}

void detach_device_range(uint64_t addr, size_t length) noexcept {
  if (config().gpu_copies_by_helper) {
    helper::detach(addr, length);
  }
}

int copy_to_region(MemoryKind kind, uint64_t region_addr, const void* src, size_t length) noexcept {
  if (length == 0) {
    return 0;
  }
  if (kind == MemoryKind::Host) {
    std::memcpy(reinterpret_cast<void*>(region_addr), src, length);
    return 0;
  }
  if (config().gpu_copies_by_helper) {
    return helper::copy_to_device(region_addr, src, length);
  }
  const CudaDriver* driver = cuda_driver();
  if (driver == nullptr) {
    return ENODEV;
  }
  warn_if_lazy_module_loading();
  DriverCallWatch watch("copy into device memory");
  ScopedContext scope(*driver, region_addr);
  cuda::CUresult rc = scope.result();
  if (rc == cuda::kSuccess) {
    // Each piece is in device memory before the call returns (and the packet is acknowledged).
    CopyEngine& engine = scope.engine();
    std::lock_guard<std::mutex> lock(engine.mutex);
    const auto* from = static_cast<const uint8_t*>(src);
    for (size_t done = 0; done < length && rc == cuda::kSuccess;) {
      size_t piece = std::min(length - done, kStagingBytes);
      std::memcpy(engine.staging, from + done, piece);
      rc = driver->memcpy_htod_async(region_addr + done, engine.staging, piece, engine.stream);
      if (rc == cuda::kSuccess) {
        rc = driver->stream_synchronize(engine.stream);
      }
      done += piece;
    }
  }
  if (rc != cuda::kSuccess) {
    log_copy_failure_once(*driver, "copy into device memory", rc);
    return errno_for(rc);
  }
  return 0;
}

int copy_from_region(MemoryKind kind, uint64_t region_addr, void* dst, size_t length) noexcept {
  if (length == 0) {
    return 0;
  }
  if (kind == MemoryKind::Host) {
    std::memcpy(dst, reinterpret_cast<const void*>(region_addr), length);
    return 0;
  }
  if (config().gpu_copies_by_helper) {
    return helper::copy_from_device(region_addr, dst, length);
  }
  const CudaDriver* driver = cuda_driver();
  if (driver == nullptr) {
    return ENODEV;
  }
  warn_if_lazy_module_loading();
  DriverCallWatch watch("copy out of device memory");
  ScopedContext scope(*driver, region_addr);
  cuda::CUresult rc = scope.result();
  if (rc == cuda::kSuccess) {
    CopyEngine& engine = scope.engine();
    std::lock_guard<std::mutex> lock(engine.mutex);
    auto* to = static_cast<uint8_t*>(dst);
    for (size_t done = 0; done < length && rc == cuda::kSuccess;) {
      size_t piece = std::min(length - done, kStagingBytes);
      rc = driver->memcpy_dtoh_async(engine.staging, region_addr + done, piece, engine.stream);
      if (rc == cuda::kSuccess) {
        rc = driver->stream_synchronize(engine.stream);
      }
      if (rc == cuda::kSuccess) {
        std::memcpy(to + done, engine.staging, piece);
      }
      done += piece;
    }
  }
  if (rc != cuda::kSuccess) {
    log_copy_failure_once(*driver, "copy out of device memory", rc);
    return errno_for(rc);
  }
  return 0;
}

}  // namespace vroce::gpu
