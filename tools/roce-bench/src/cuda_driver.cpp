// CUDA driver API, loaded with dlopen. Types and constants are declared here from the driver
// API's documented ABI (cuda.h), so there is no build-time CUDA dependency.
#include "cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>

#include "errors.h"

namespace roce::bench {
namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;

constexpr int kSuccess = 0;
constexpr int kErrorNoDevice = 100;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrDmaBufSupported = 124;
constexpr int kPointerAttrSyncMemops = 6;
constexpr int kRangeHandleDmaBufFd = 1;

// out[i] = a[i] + b[i], grid-stride loop over n elements. Written for PTX ISA 6.4 / sm_70 so the
// driver's JIT can compile it for any GPU from Volta on.
constexpr const char* kAddPtx = R"(
.version 6.4
.target sm_70
.address_size 64

.visible .entry roce_bench_add_f32(
    .param .u64 param_out,
    .param .u64 param_a,
    .param .u64 param_b,
    .param .u64 param_n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [param_out];
    ld.param.u64 %rd2, [param_a];
    ld.param.u64 %rd3, [param_b];
    ld.param.u64 %rd4, [param_n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd3, %rd3;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    cvt.u64.u32 %rd5, %r3;
    mad.wide.u32 %rd5, %r1, %r2, %rd5;
    mul.wide.u32 %rd6, %r4, %r2;
LOOP:
    setp.ge.u64 %p1, %rd5, %rd4;
    @%p1 bra DONE;
    shl.b64 %rd7, %rd5, 2;
    add.s64 %rd8, %rd2, %rd7;
    ld.global.f32 %f1, [%rd8];
    add.s64 %rd9, %rd3, %rd7;
    ld.global.f32 %f2, [%rd9];
    add.rn.f32 %f3, %f1, %f2;
    add.s64 %rd10, %rd1, %rd7;
    st.global.f32 [%rd10], %f3;
    add.s64 %rd5, %rd5, %rd6;
    bra.uni LOOP;
DONE:
    ret;
}
)";

}  // namespace

const char* reduction_ptx() {
  return kAddPtx;
}

struct CudaDriver::Api {
  void* library = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, std::size_t) = nullptr;
  CUresult (*cuPointerSetAttribute)(const void*, int, CUdeviceptr) = nullptr;
  CUresult (*cuMemGetHandleForAddressRange)(void*, CUdeviceptr, std::size_t, int,
                                            unsigned long long) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
};

namespace {

template <typename Fn>
void bind(void* library, Fn& fn, const char* name, bool required) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (fn == nullptr && required) {
    throw BenchError(std::string("libcuda.so.1 lacks ") + name + "; the NVIDIA driver is too old");
  }
}

}  // namespace

CudaDriver& CudaDriver::instance() {
  static CudaDriver driver;
  return driver;
}

CudaDriver::~CudaDriver() = default;

CudaDriver::CudaDriver() : api_(std::make_unique<Api>()) {
  Api* api = api_.get();
  api->library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) {
    const char* why = dlerror();
    throw BenchError(std::string("--cuda: no GPU driver on this machine (cannot load "
                                 "libcuda.so.1: ") +
                     (why != nullptr ? why : "?") + "); run without --cuda for host memory");
  }
  void* lib = api->library;
  bind(lib, api->cuInit, "cuInit", true);
  bind(lib, api->cuDeviceGetCount, "cuDeviceGetCount", true);
  bind(lib, api->cuDeviceGet, "cuDeviceGet", true);
  bind(lib, api->cuDeviceGetName, "cuDeviceGetName", true);
  bind(lib, api->cuDeviceGetAttribute, "cuDeviceGetAttribute", true);
  bind(lib, api->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", true);
  bind(lib, api->cuCtxSetCurrent, "cuCtxSetCurrent", true);
  bind(lib, api->cuCtxSynchronize, "cuCtxSynchronize", true);
  bind(lib, api->cuMemAlloc, "cuMemAlloc_v2", true);
  bind(lib, api->cuMemFree, "cuMemFree_v2", true);
  bind(lib, api->cuMemcpyHtoD, "cuMemcpyHtoD_v2", true);
  bind(lib, api->cuMemcpyDtoH, "cuMemcpyDtoH_v2", true);
  bind(lib, api->cuMemsetD8, "cuMemsetD8_v2", true);
  bind(lib, api->cuPointerSetAttribute, "cuPointerSetAttribute", true);
  bind(lib, api->cuModuleLoadData, "cuModuleLoadData", true);
  bind(lib, api->cuModuleGetFunction, "cuModuleGetFunction", true);
  bind(lib, api->cuLaunchKernel, "cuLaunchKernel", true);
  bind(lib, api->cuGetErrorString, "cuGetErrorString", false);
  bind(lib, api->cuMemGetHandleForAddressRange, "cuMemGetHandleForAddressRange", false);
  const CUresult init = api->cuInit(0);
  if (init == kErrorNoDevice) {
    throw BenchError(
        "--cuda: the CUDA driver reports no GPU (cuInit: CUDA_ERROR_NO_DEVICE); "
        "run without --cuda for host memory");
  }
  check(init, "cuInit");
  check(api->cuDeviceGetCount(&device_count_), "cuDeviceGetCount");
  if (device_count_ <= 0) {
    throw BenchError("--cuda: no GPU found (cuDeviceGetCount = 0); run without --cuda");
  }
}

void CudaDriver::check(int result, const char* call) const {
  if (result == kSuccess) {
    return;
  }
  const char* text = nullptr;
  if (api_ != nullptr && api_->cuGetErrorString != nullptr) {
    api_->cuGetErrorString(result, &text);
  }
  throw BenchError(std::string("CUDA ") + call + " failed: error " + std::to_string(result) +
                   (text != nullptr ? std::string(" (") + text + ")" : std::string()));
}

void CudaDriver::use_device(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count_) {
    throw BenchError("--cuda-device " + std::to_string(ordinal) + ": this machine has " +
                     std::to_string(device_count_) + " GPU(s)");
  }
  CUdevice dev = 0;
  check(api_->cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  check(api_->cuDevicePrimaryCtxRetain(&context_, dev), "cuDevicePrimaryCtxRetain");
  check(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  device_ = ordinal;
}

std::string CudaDriver::device_name() const {
  char name[256] = {};
  check(api_->cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
  return name;
}

int CudaDriver::compute_capability_major() const {
  int major = 0;
  check(api_->cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor, device_),
        "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  return major;
}

bool CudaDriver::dmabuf_supported() const {
  if (api_->cuMemGetHandleForAddressRange == nullptr) {
    return false;
  }
  int supported = 0;
  if (api_->cuDeviceGetAttribute(&supported, kAttrDmaBufSupported, device_) != kSuccess) {
    return false;
  }
  return supported != 0;
}

std::uint64_t CudaDriver::alloc(std::size_t bytes) {
  CUdeviceptr ptr = 0;
  check(api_->cuMemAlloc(&ptr, bytes), "cuMemAlloc");
  // As NCCL does for buffers the NIC writes: order the driver's own copies with the NIC's DMA.
  const unsigned int one = 1;
  check(api_->cuPointerSetAttribute(&one, kPointerAttrSyncMemops, ptr),
        "cuPointerSetAttribute(SYNC_MEMOPS)");
  return ptr;
}

void CudaDriver::free(std::uint64_t ptr) noexcept {
  if (ptr != 0) {
    api_->cuMemFree(ptr);
  }
}

void CudaDriver::copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes) {
  check(api_->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

void CudaDriver::copy_to_host(void* dst, std::uint64_t src, std::size_t bytes) {
  check(api_->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

void CudaDriver::zero(std::uint64_t ptr, std::size_t bytes) {
  check(api_->cuMemsetD8(ptr, 0, bytes), "cuMemsetD8");
  check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
}

int CudaDriver::export_dmabuf(std::uint64_t ptr, std::size_t bytes) {
  if (api_->cuMemGetHandleForAddressRange == nullptr) {
    throw BenchError(
        "--dmabuf on: the CUDA driver has no cuMemGetHandleForAddressRange "
        "(CUDA 11.7+ needed); use --dmabuf off");
  }
  int fd = -1;
  check(api_->cuMemGetHandleForAddressRange(&fd, ptr, bytes, kRangeHandleDmaBufFd, 0),
        "cuMemGetHandleForAddressRange(DMA_BUF_FD)");
  return fd;
}

void CudaDriver::load_kernel() {
  if (add_kernel_ != nullptr) {
    return;
  }
  check(api_->cuModuleLoadData(&module_, kAddPtx), "cuModuleLoadData(reduction PTX)");
  check(api_->cuModuleGetFunction(&add_kernel_, module_, "roce_bench_add_f32"),
        "cuModuleGetFunction");
}

void CudaDriver::add_floats(std::uint64_t out, std::uint64_t a, std::uint64_t b,
                            std::size_t count) {
  if (count == 0) {
    return;
  }
  load_kernel();
  unsigned long long p_out = out;
  unsigned long long p_a = a;
  unsigned long long p_b = b;
  unsigned long long p_n = count;
  void* params[] = {&p_out, &p_a, &p_b, &p_n};
  constexpr unsigned kThreads = 256;
  const auto blocks =
      static_cast<unsigned>(std::min<std::size_t>((count + kThreads - 1) / kThreads, 4096));
  check(
      api_->cuLaunchKernel(add_kernel_, blocks, 1, 1, kThreads, 1, 1, 0, nullptr, params, nullptr),
      "cuLaunchKernel(reduction)");
  check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace roce::bench
