// The few CUDA driver API entry points the GPUDirect registration probe needs, bound from the
// libcuda.so.1 this process has already loaded (dlopen with RTLD_NOLOAD): the plugin has no
// CUDA build or run-time dependency, never loads the driver into a process that does not use
// it, and never creates a context. Types are declared here from the driver API's documented ABI.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "roce/result.h"

namespace roce::cuda {

using Result = int;                    // CUresult; 0 = CUDA_SUCCESS
using Context = struct CudaContext*;   // CUcontext (opaque)
using DevicePtr = unsigned long long;  // CUdeviceptr on 64-bit hosts

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
  // "CUDA_ERROR_OUT_OF_MEMORY" when the driver can name it, else "CUresult 2".
  std::string error_name(Result result) const;

 private:
  Driver() = default;

  void* handle_ = nullptr;
  Result (*ctx_get_current_)(Context*) = nullptr;
  Result (*mem_alloc_)(DevicePtr*, size_t) = nullptr;
  Result (*mem_free_)(DevicePtr) = nullptr;
  Result (*get_error_name_)(Result, const char**) = nullptr;
};

}  // namespace roce::cuda
