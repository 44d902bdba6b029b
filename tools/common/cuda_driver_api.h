// The CUDA driver API entry points the tools use (roce-bench's GPU buffers and reduction,
// gdr-check's dma-buf export), declared here from the driver API's documented ABI (cuda.h), so
// nothing needs the CUDA toolkit to build, and loaded once per process from libcuda.so.1 at run
// time, so every tool starts, and says plainly why not, on a machine without a GPU driver.
//
// The plugin (plugin/core/memory/cuda_driver.h) and vroce (vroce/src/gpu/cuda_driver.h) keep their
// own loaders on purpose: each is a shared object that NCCL or an application loads into its
// process, built self-contained (libstdc++ inside, hidden symbols, nothing of the tools), and each
// loads the driver with its own policy: the plugin binds only a libcuda.so.1 the process has
// already loaded (RTLD_NOLOAD, never a driver of its own into a process that does not use one);
// vroce loads and initialises it on first use and falls back to host memory without it. The tools
// load it on demand, as a program that uses the GPU does. Do not include <cuda.h> beside this
// header: it #defines several of these names (cuMemAlloc ...).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>

namespace roce::tools {

namespace cuda_abi {
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;

inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kErrorNoDevice = 100;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrDmaBufSupported = 124;
inline constexpr int kPointerAttrSyncMemops = 6;
inline constexpr int kRangeHandleDmaBufFd = 1;
}  // namespace cuda_abi

struct CudaDriverApi {
  using CUresult = cuda_abi::CUresult;
  using CUdevice = cuda_abi::CUdevice;
  using CUdeviceptr = cuda_abi::CUdeviceptr;
  using CUcontext = cuda_abi::CUcontext;
  using CUmodule = cuda_abi::CUmodule;
  using CUfunction = cuda_abi::CUfunction;
  using CUstream = cuda_abi::CUstream;

  // Empty when libcuda.so.1 loaded; else dlerror's words.
  std::string load_error;
  void* library = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t) = nullptr;  // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;                 // cuMemFree_v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, std::size_t) = nullptr;
  CUresult (*cuPointerSetAttribute)(const void*, int, CUdeviceptr) = nullptr;
  CUresult (*cuMemGetHandleForAddressRange)(void*, CUdeviceptr, std::size_t, int,
                                            unsigned long long) = nullptr;  // CUDA 11.7+
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;

  // The first of `names` (driver symbol names, "cuMemAlloc_v2") that libcuda.so.1 lacks, or null.
  const char* first_missing(std::initializer_list<const char*> names) const;
  // "error 2 (out of memory)": the number and, when the driver has it, its text.
  std::string error_text(CUresult result) const;
};

// The process's one load of libcuda.so.1 (thread-safe, never unloaded: the driver keeps threads).
// Never throws: load_error and first_missing() say what is not there.
const CudaDriverApi& cuda_driver_api();

}  // namespace roce::tools
