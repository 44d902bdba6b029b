// The CUDA driver, loaded on first use with dlopen("libcuda.so.1") and initialised with cuInit.
// A process without the driver or without a GPU gets nullptr and vroce treats all memory as
// host memory; the reason is logged once at info level.
#pragma once

#include <string>

#include "gpu/cuda_api.h"

namespace vroce::gpu {

struct CudaDriver {
  cuda::cuGetErrorName_t get_error_name = nullptr;
  cuda::cuPointerGetAttributes_t pointer_get_attributes = nullptr;
  cuda::cuDeviceGet_t device_get = nullptr;
  cuda::cuDevicePrimaryCtxRetain_t primary_ctx_retain = nullptr;
  cuda::cuCtxGetCurrent_t ctx_get_current = nullptr;
  cuda::cuCtxSetCurrent_t ctx_set_current = nullptr;
  cuda::cuStreamCreate_t stream_create = nullptr;
  cuda::cuStreamSynchronize_t stream_synchronize = nullptr;
  cuda::cuMemcpyHtoDAsync_t memcpy_htod_async = nullptr;
  cuda::cuMemcpyDtoHAsync_t memcpy_dtoh_async = nullptr;
  cuda::cuMemAllocHost_t mem_alloc_host = nullptr;
  // CUDA IPC: the application's process exports its allocations, the copy helper opens them
  // (gpu/copy_helper.h) and copies from shared memory it page-locks.
  cuda::cuIpcGetMemHandle_t ipc_get_mem_handle = nullptr;
  cuda::cuIpcOpenMemHandle_t ipc_open_mem_handle = nullptr;
  cuda::cuIpcCloseMemHandle_t ipc_close_mem_handle = nullptr;
  cuda::cuMemHostRegister_t mem_host_register = nullptr;
  // For the copy helper's kernel only; nullptr where the driver lacks them (the helper then
  // makes every copy with the copy engine).
  cuda::cuDeviceGetAttribute_t device_get_attribute = nullptr;
  cuda::cuMemHostGetDevicePointer_t mem_host_get_device_pointer = nullptr;
  cuda::cuModuleLoadData_t module_load_data = nullptr;
  cuda::cuModuleGetFunction_t module_get_function = nullptr;
  cuda::cuLaunchKernel_t launch_kernel = nullptr;
  cuda::cuStreamQuery_t stream_query = nullptr;

  bool can_run_kernels() const {
    return device_get_attribute != nullptr && mem_host_get_device_pointer != nullptr &&
           module_load_data != nullptr && module_get_function != nullptr &&
           launch_kernel != nullptr && stream_query != nullptr;
  }

  // "CUDA_ERROR_INVALID_VALUE (1)" and the like, for log lines.
  std::string error_text(cuda::CUresult result) const;
};

// The loaded, initialised driver, or nullptr; the first call does the loading (thread-safe).
const CudaDriver* cuda_driver() noexcept;

// Why cuda_driver() is nullptr ("libcuda.so.1 not found: ...", "cuInit failed: ..."); empty when
// the driver is loaded.
const std::string& cuda_unavailable_reason() noexcept;

}  // namespace vroce::gpu
