// The few CUDA driver API entry points the GPUDirect registration probe needs, bound from the
// libcuda.so.1 this process has already loaded (dlopen with RTLD_NOLOAD): the plugin has no
// CUDA build or run-time dependency, never loads the driver into a process that does not use
// it, and never creates a context. Types are declared here from the driver API's documented ABI.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "roce/result.h"

namespace roce::cuda {

using Result = int;                    // CUresult; 0 = CUDA_SUCCESS
using Context = struct CudaContext*;   // CUcontext (opaque)
using DevicePtr = unsigned long long;  // CUdeviceptr on 64-bit hosts
using Device = int;                    // CUdevice

// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: the driver can export device memory as a dma-buf.
inline constexpr int kAttrDmaBufSupported = 124;

class Driver {
 public:
  // The driver of this process; fails saying why when libcuda.so.1 is not loaded or lacks the
  // entry points. (roce::Result: cuda::Result here is a CUresult.)
  static roce::Result<std::unique_ptr<Driver>> attach();
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  Result ctx_get_current(Context* context) const noexcept { return ctx_get_current_(context); }
  Result mem_alloc(DevicePtr* ptr, size_t bytes) const noexcept { return mem_alloc_(ptr, bytes); }
  Result mem_free(DevicePtr ptr) const noexcept { return mem_free_(ptr); }
  // Optional entry points (a stand-in driver may lack them): false when absent.
  bool has_device_queries() const noexcept {
    return ctx_get_device_ != nullptr && device_get_attribute_ != nullptr &&
           device_get_count_ != nullptr;
  }
  bool has_pci_bus_id() const noexcept { return device_get_pci_bus_id_ != nullptr; }
  // The CUDA_ERROR_NOT_FOUND (500) answer when the entry point is absent.
  Result ctx_get_device(Device* device) const noexcept {
    return ctx_get_device_ != nullptr ? ctx_get_device_(device) : kAbsent;
  }
  Result device_get_count(int* count) const noexcept {
    return device_get_count_ != nullptr ? device_get_count_(count) : kAbsent;
  }
  Result device_get(Device* device, int ordinal) const noexcept {
    return device_get_ != nullptr ? device_get_(device, ordinal) : kAbsent;
  }
  Result device_get_attribute(int* value, int attribute, Device device) const noexcept {
    return device_get_attribute_ != nullptr ? device_get_attribute_(value, attribute, device)
                                            : kAbsent;
  }
  // "0000:17:00.0" (lower case, as sysfs names it), or nullopt.
  std::optional<std::string> pci_bus_id(Device device) const;
  // "CUDA_ERROR_OUT_OF_MEMORY" when the driver can name it, else "CUresult 2".
  std::string error_name(Result result) const;

 private:
  Driver() = default;

  void* handle_ = nullptr;
  Result (*ctx_get_current_)(Context*) = nullptr;
  Result (*mem_alloc_)(DevicePtr*, size_t) = nullptr;
  Result (*mem_free_)(DevicePtr) = nullptr;
  Result (*get_error_name_)(Result, const char**) = nullptr;
  Result (*ctx_get_device_)(Device*) = nullptr;
  Result (*device_get_count_)(int*) = nullptr;
  Result (*device_get_)(Device*, int) = nullptr;
  Result (*device_get_attribute_)(int*, int, Device) = nullptr;
  Result (*device_get_pci_bus_id_)(char*, int, Device) = nullptr;
  static constexpr Result kAbsent = 500;
};

}  // namespace roce::cuda
