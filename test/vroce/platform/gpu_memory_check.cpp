// The CUDA path of gpu/memory.h on a machine with a GPU: allocates device memory through the
// driver API, checks that vroce classifies it (and host memory, pinned host memory and ranges
// that overrun an allocation) correctly, and moves data through it with vroce's copy functions
// from a thread with no CUDA context, as vroce's progress thread would, cross-checked against
// the driver's own copies. Exits 77 (CTest SKIP) with the reason when there is no CUDA driver or
// no GPU, 0 when every check passes, 1 otherwise.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu/cuda_api.h"
#include "gpu/cuda_driver.h"
#include "gpu/memory.h"

namespace cuda = vroce::gpu::cuda;
using vroce::gpu::MemoryKind;

namespace {

constexpr int kSkip = 77;
int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) {
    ++failures;
  }
}

// The allocation entry points vroce itself never needs, bound here for the check only.
struct Allocator {
  cuda::cuDeviceGetCount_t device_get_count = nullptr;
  cuda::cuDeviceGet_t device_get = nullptr;
  cuda::cuDevicePrimaryCtxRetain_t primary_ctx_retain = nullptr;
  cuda::cuCtxSetCurrent_t ctx_set_current = nullptr;
  cuda::cuCtxGetCurrent_t ctx_get_current = nullptr;
  cuda::cuMemAlloc_t mem_alloc = nullptr;
  cuda::cuMemFree_t mem_free = nullptr;
  cuda::cuMemAllocHost_t mem_alloc_host = nullptr;
  cuda::cuMemFreeHost_t mem_free_host = nullptr;
  cuda::cuMemcpyHtoD_t memcpy_htod = nullptr;
  cuda::cuMemcpyDtoH_t memcpy_dtoh = nullptr;
};

template <typename Fn>
bool bind_symbol(void* library, const char* name, Fn* target) {
  void* symbol = dlsym(library, name);
  *target = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

bool load_allocator(Allocator* a) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return library != nullptr && bind_symbol(library, "cuDeviceGetCount", &a->device_get_count) &&
         bind_symbol(library, "cuDeviceGet", &a->device_get) &&
         bind_symbol(library, "cuDevicePrimaryCtxRetain", &a->primary_ctx_retain) &&
         bind_symbol(library, "cuCtxSetCurrent", &a->ctx_set_current) &&
         bind_symbol(library, "cuCtxGetCurrent", &a->ctx_get_current) &&
         bind_symbol(library, "cuMemAlloc_v2", &a->mem_alloc) &&
         bind_symbol(library, "cuMemFree_v2", &a->mem_free) &&
         bind_symbol(library, "cuMemAllocHost_v2", &a->mem_alloc_host) &&
         bind_symbol(library, "cuMemFreeHost", &a->mem_free_host) &&
         bind_symbol(library, "cuMemcpyHtoD_v2", &a->memcpy_htod) &&
         bind_symbol(library, "cuMemcpyDtoH_v2", &a->memcpy_dtoh);
}

std::vector<unsigned char> pattern(size_t length, unsigned seed) {
  std::vector<unsigned char> bytes(length);
  for (size_t i = 0; i < length; ++i) {
    bytes[i] = static_cast<unsigned char>((i * 131 + seed) & 0xff);
  }
  return bytes;
}

void check_device(const Allocator& a, int ordinal) {
  std::printf("-- device %d\n", ordinal);
  cuda::CUdevice device = 0;
  cuda::CUcontext ctx = nullptr;
  if (a.device_get(&device, ordinal) != cuda::kSuccess ||
      a.primary_ctx_retain(&ctx, device) != cuda::kSuccess ||
      a.ctx_set_current(ctx) != cuda::kSuccess) {
    check(false, "make the primary context current");
    return;
  }
  constexpr size_t kSize = (4 << 20) + 123;  // not a whole number of pages
  cuda::CUdeviceptr dev = 0;
  if (a.mem_alloc(&dev, kSize) != cuda::kSuccess) {
    check(false, "cuMemAlloc");
    return;
  }
  const void* dev_ptr = reinterpret_cast<const void*>(dev);
  check(vroce::gpu::classify(dev_ptr, kSize) == MemoryKind::Cuda, "whole allocation is Cuda");
  check(vroce::gpu::classify(reinterpret_cast<const void*>(dev + 4096), 1000) == MemoryKind::Cuda,
        "interior range is Cuda");
  check(vroce::gpu::is_device_range(dev, kSize), "is_device_range(whole)");
  check(!vroce::gpu::is_device_range(dev + kSize - 10, 20), "overrunning range is not");
  check(
      vroce::gpu::classify(reinterpret_cast<const void*>(dev + kSize - 10), 20) == MemoryKind::Host,
      "overrunning range classifies as Host");
  check(vroce::gpu::is_device_pointer(dev + kSize - 10), "but its start is device memory");

  std::vector<unsigned char> host(4096);
  check(vroce::gpu::classify(host.data(), host.size()) == MemoryKind::Host, "malloc is Host");
  check(!vroce::gpu::is_device_pointer(reinterpret_cast<uint64_t>(host.data())),
        "malloc is no device pointer");
  void* pinned = nullptr;
  if (a.mem_alloc_host(&pinned, 65536) == cuda::kSuccess) {
    check(vroce::gpu::classify(pinned, 65536) == MemoryKind::Host, "pinned host memory is Host");
    check(vroce::gpu::copy_to_region(MemoryKind::Host, reinterpret_cast<uint64_t>(pinned),
                                     host.data(), 4096) == 0,
          "host copy into pinned memory");
    a.mem_free_host(pinned);
  } else {
    check(false, "cuMemAllocHost");
  }

  // Copies from a thread that has no current context, at an unaligned offset, and back.
  const size_t offset = 4093;
  const size_t length = (1 << 20) + 7;
  std::vector<unsigned char> in = pattern(length, static_cast<unsigned>(ordinal) + 1);
  std::vector<unsigned char> out(length, 0);
  std::vector<unsigned char> driver_view(length, 0);
  int to_rc = -1;
  int from_rc = -1;
  cuda::CUcontext seen_before = reinterpret_cast<cuda::CUcontext>(1);
  cuda::CUcontext seen_after = reinterpret_cast<cuda::CUcontext>(1);
  std::thread progress([&] {
    a.ctx_get_current(&seen_before);
    to_rc = vroce::gpu::copy_to_region(MemoryKind::Cuda, dev + offset, in.data(), length);
    from_rc = vroce::gpu::copy_from_region(MemoryKind::Cuda, dev + offset, out.data(), length);
    a.ctx_get_current(&seen_after);
  });
  progress.join();
  check(seen_before == nullptr, "the copying thread starts without a context");
  check(to_rc == 0, "copy_to_region(Cuda)");
  check(from_rc == 0, "copy_from_region(Cuda)");
  check(out == in, "data read back equals data written");
  check(seen_after == nullptr, "the copying thread's context is restored (none)");
  check(a.memcpy_dtoh(driver_view.data(), dev + offset, length) == cuda::kSuccess &&
            driver_view == in,
        "cuMemcpyDtoH sees the bytes vroce wrote");

  std::vector<unsigned char> second = pattern(length, 99);
  check(a.memcpy_htod(dev + offset, second.data(), length) == cuda::kSuccess, "cuMemcpyHtoD");
  check(vroce::gpu::copy_from_region(MemoryKind::Cuda, dev + offset, out.data(), length) == 0 &&
            out == second,
        "vroce reads the bytes the driver wrote (from a thread with a context)");
  check(vroce::gpu::copy_to_region(MemoryKind::Cuda, dev, nullptr, 0) == 0, "zero-length copy");
  cuda::CUcontext current = nullptr;
  check(a.ctx_get_current(&current) == cuda::kSuccess && current == ctx,
        "the application thread keeps its context");
  a.mem_free(dev);
}

}  // namespace

int main() {
  const vroce::gpu::CudaDriver* driver = vroce::gpu::cuda_driver();
  if (driver == nullptr) {
    std::printf("SKIP: no usable CUDA driver: %s\n", vroce::gpu::cuda_unavailable_reason().c_str());
    return kSkip;
  }
  Allocator allocator;
  if (!load_allocator(&allocator)) {
    std::printf("SKIP: libcuda.so.1 lacks the allocation entry points this check uses\n");
    return kSkip;
  }
  int count = 0;
  if (allocator.device_get_count(&count) != cuda::kSuccess || count == 0) {
    std::printf("SKIP: the CUDA driver reports no GPU\n");
    return kSkip;
  }
  std::printf("%d CUDA device(s)\n", count);
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    check_device(allocator, ordinal);
  }
  std::printf("%s: %d failure(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
