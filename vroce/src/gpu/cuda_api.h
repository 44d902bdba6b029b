// The few CUDA driver API types, constants and function signatures vroce uses, declared from the
// driver's documented ABI so that vroce builds without the CUDA toolkit and loads libcuda.so.1
// only at run time. Names follow cuda.h (without its typedef-struct spellings); values are the
// stable ABI values of the driver API.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vroce::gpu::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // the driver ABI spells it so
struct CUctx_st;
using CUcontext = CUctx_st*;
struct CUstream_st;
using CUstream = CUstream_st*;
struct CUmod_st;
using CUmodule = CUmod_st*;
struct CUfunc_st;
using CUfunction = CUfunc_st*;

inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kErrorInvalidValue = 1;
inline constexpr CUresult kErrorNoDevice = 100;
inline constexpr CUresult kErrorNotReady = 600;  // cuStreamQuery: work still running

// CUdevice_attribute: whether contexts on the device are clients of one MPS server, and so run
// their kernels side by side instead of in turns.
inline constexpr int kDeviceAttributeMpsEnabled = 133;

// CUpointer_attribute values.
inline constexpr int kPointerAttributeContext = 1;
inline constexpr int kPointerAttributeMemoryType = 2;
inline constexpr int kPointerAttributeDeviceOrdinal = 9;
inline constexpr int kPointerAttributeRangeStartAddr = 11;
inline constexpr int kPointerAttributeRangeSize = 12;

// CUstream_flags: a stream that never synchronises with the legacy default stream.
inline constexpr unsigned int kStreamNonBlocking = 0x1;

// CUmemorytype values.
inline constexpr unsigned int kMemoryTypeHost = 1;
inline constexpr unsigned int kMemoryTypeDevice = 2;

// CUDA IPC: an opaque handle one process exports for an allocation and another opens
// (CU_IPC_HANDLE_SIZE bytes, passed by value).
inline constexpr size_t kIpcHandleSize = 64;
struct CUipcMemHandle {
  unsigned char reserved[kIpcHandleSize];
};
inline constexpr unsigned int kIpcMemLazyEnablePeerAccess = 0x1;

// cuMemHostRegister flags.
inline constexpr unsigned int kMemHostRegisterPortable = 0x1;
inline constexpr unsigned int kMemHostRegisterDeviceMap = 0x2;

using cuInit_t = CUresult (*)(unsigned int flags);
using cuGetErrorName_t = CUresult (*)(CUresult error, const char** name);
using cuPointerGetAttributes_t = CUresult (*)(unsigned int count, int* attributes, void** data,
                                              CUdeviceptr ptr);
using cuDeviceGet_t = CUresult (*)(CUdevice* device, int ordinal);
using cuDeviceGetCount_t = CUresult (*)(int* count);
using cuDevicePrimaryCtxRetain_t = CUresult (*)(CUcontext* ctx, CUdevice device);
using cuCtxGetCurrent_t = CUresult (*)(CUcontext* ctx);
using cuCtxSetCurrent_t = CUresult (*)(CUcontext ctx);
using cuStreamCreate_t = CUresult (*)(CUstream* stream, unsigned int flags);
using cuStreamSynchronize_t = CUresult (*)(CUstream stream);
using cuMemcpyHtoDAsync_t = CUresult (*)(CUdeviceptr dst, const void* src, size_t bytes,
                                         CUstream stream);
using cuMemcpyDtoHAsync_t = CUresult (*)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);
using cuMemcpyHtoD_t = CUresult (*)(CUdeviceptr dst, const void* src, size_t bytes);
using cuMemcpyDtoH_t = CUresult (*)(void* dst, CUdeviceptr src, size_t bytes);
using cuMemAlloc_t = CUresult (*)(CUdeviceptr* ptr, size_t bytes);
using cuMemFree_t = CUresult (*)(CUdeviceptr ptr);
using cuMemAllocHost_t = CUresult (*)(void** ptr, size_t bytes);
using cuMemFreeHost_t = CUresult (*)(void* ptr);
using cuMemHostRegister_t = CUresult (*)(void* ptr, size_t bytes, unsigned int flags);
using cuIpcGetMemHandle_t = CUresult (*)(CUipcMemHandle* handle, CUdeviceptr ptr);
using cuIpcOpenMemHandle_t = CUresult (*)(CUdeviceptr* ptr, CUipcMemHandle handle,
                                          unsigned int flags);
using cuIpcCloseMemHandle_t = CUresult (*)(CUdeviceptr ptr);
// The copy helper's kernel (vroce/copier/copy_kernel.cu).
using cuDeviceGetAttribute_t = CUresult (*)(int* value, int attribute, CUdevice device);
using cuMemHostGetDevicePointer_t = CUresult (*)(CUdeviceptr* device, void* host,
                                                 unsigned int flags);
using cuModuleLoadData_t = CUresult (*)(CUmodule* module, const void* image);
using cuModuleGetFunction_t = CUresult (*)(CUfunction* function, CUmodule module, const char* name);
using cuLaunchKernel_t = CUresult (*)(CUfunction function, unsigned int grid_x, unsigned int grid_y,
                                      unsigned int grid_z, unsigned int block_x,
                                      unsigned int block_y, unsigned int block_z,
                                      unsigned int shared_bytes, CUstream stream, void** params,
                                      void** extra);
using cuStreamQuery_t = CUresult (*)(CUstream stream);

}  // namespace vroce::gpu::cuda
