// The entry points of the stand-in libcuda.so.1 (fake_cuda.cpp), with the driver API's
// signatures, for the stand-in itself and for tests that allocate and inspect its device memory.
#pragma once

#include <cstddef>
#include <cstdint>

struct FakeContext;
struct FakeStream;
struct FakeModule;
struct FakeFunction;

// What a CUDA IPC handle holds here, in the 64 bytes of CUipcMemHandle: the exporting process,
// its arena's memfd and where the allocation lies in it.
struct FakeIpcHandle {
  uint64_t magic;
  int64_t pid;
  int64_t fd;
  uint64_t offset;
  uint64_t size;
  unsigned char unused[24];
};
static_assert(sizeof(FakeIpcHandle) == 64, "CUipcMemHandle is 64 bytes");

extern "C" {
int cuInit(unsigned int flags);
int cuGetErrorName(int error, const char** name);
int cuPointerGetAttributes(unsigned int count, int* attributes, void** data,
                           unsigned long long ptr);
int cuDeviceGet(int* device, int ordinal);
int cuDevicePrimaryCtxRetain(FakeContext** ctx, int device);
int cuCtxGetCurrent(FakeContext** ctx);
int cuCtxSetCurrent(FakeContext* ctx);
int cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t bytes);
int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t bytes);
int cuStreamCreate(FakeStream** stream, unsigned int flags);
int cuStreamSynchronize(FakeStream* stream);
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, size_t bytes, FakeStream* stream);
int cuMemcpyDtoHAsync_v2(void* dst, unsigned long long src, size_t bytes, FakeStream* stream);
int cuMemAllocHost_v2(void** ptr, size_t bytes);
int cuMemAlloc_v2(unsigned long long* ptr, size_t bytes);
int cuMemFree_v2(unsigned long long ptr);
int cuIpcGetMemHandle(void* handle, unsigned long long ptr);
int cuIpcOpenMemHandle_v2(unsigned long long* ptr, FakeIpcHandle handle, unsigned int flags);
int cuIpcCloseMemHandle(unsigned long long ptr);
int cuMemHostRegister_v2(void* ptr, size_t bytes, unsigned int flags);
int cuDeviceGetAttribute(int* value, int attribute, int device);
int cuMemHostGetDevicePointer_v2(unsigned long long* device, void* host, unsigned int flags);
int cuModuleLoadData(FakeModule** module, const void* image);
int cuModuleGetFunction(FakeFunction** function, FakeModule* module, const char* name);
int cuLaunchKernel(FakeFunction* function, unsigned int grid_x, unsigned int grid_y,
                   unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                   unsigned int block_z, unsigned int shared_bytes, FakeStream* stream,
                   void** params, void** extra);
int cuStreamQuery(FakeStream* stream);
unsigned long long fake_cuda_copies();
// Copies on a non-blocking stream whose host side is page-locked (cuMemAllocHost): the only
// kind vroce may make. A subset of fake_cuda_copies().
unsigned long long fake_cuda_stream_copies();
unsigned long long fake_cuda_bytes();
// Non-zero: cuStreamSynchronize blocks until called again with 0.
void fake_cuda_hold_stream_syncs(int hold);
}
