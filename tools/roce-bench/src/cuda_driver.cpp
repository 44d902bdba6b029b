// roce-bench's GPU memory and reduction over the tools' CUDA driver API table
// (tools/common/cuda_driver_api.h: declared from the documented ABI, loaded at run time).
#include "cuda_driver.h"

#include <algorithm>
#include <utility>

#include "cuda_driver_api.h"
#include "errors.h"

namespace roce::bench {
namespace {

using tools::cuda_abi::CUdevice;
using tools::cuda_abi::CUdeviceptr;
using tools::cuda_abi::CUresult;
using tools::cuda_abi::kAttrComputeCapabilityMajor;
using tools::cuda_abi::kAttrDmaBufSupported;
using tools::cuda_abi::kErrorNoDevice;
using tools::cuda_abi::kPointerAttrSyncMemops;
using tools::cuda_abi::kRangeHandleDmaBufFd;
using tools::cuda_abi::kSuccess;

// out[i] = a[i] + b[i], grid-stride loops over n elements of fp32, fp16 and bf16. The 16-bit
// types are widened to f32, added and rounded back to nearest even (bf16 by integer rounding,
// since cvt to bf16 needs sm_80), as NCCL's own reductions do. Written for PTX ISA 6.4 / sm_70
// so the driver's JIT can compile it for any GPU from Volta on.
#define ROCE_BENCH_ADD_ENTRY(NAME, SHIFT, LOAD_A, LOAD_B, STORE)                           \
  ".visible .entry " NAME                                                                  \
  "(\n"                                                                                    \
  "    .param .u64 param_out,\n"                                                           \
  "    .param .u64 param_a,\n"                                                             \
  "    .param .u64 param_b,\n"                                                             \
  "    .param .u64 param_n)\n"                                                             \
  "{\n"                                                                                    \
  "    .reg .pred %p<2>;\n"                                                                \
  "    .reg .b16 %h<4>;\n"                                                                 \
  "    .reg .b32 %r<10>;\n"                                                                \
  "    .reg .f32 %f<4>;\n"                                                                 \
  "    .reg .b64 %rd<12>;\n"                                                               \
  "    ld.param.u64 %rd1, [param_out];\n"                                                  \
  "    ld.param.u64 %rd2, [param_a];\n"                                                    \
  "    ld.param.u64 %rd3, [param_b];\n"                                                    \
  "    ld.param.u64 %rd4, [param_n];\n"                                                    \
  "    cvta.to.global.u64 %rd1, %rd1;\n"                                                   \
  "    cvta.to.global.u64 %rd2, %rd2;\n"                                                   \
  "    cvta.to.global.u64 %rd3, %rd3;\n"                                                   \
  "    mov.u32 %r1, %ctaid.x;\n"                                                           \
  "    mov.u32 %r2, %ntid.x;\n"                                                            \
  "    mov.u32 %r3, %tid.x;\n"                                                             \
  "    mov.u32 %r4, %nctaid.x;\n"                                                          \
  "    cvt.u64.u32 %rd5, %r3;\n"                                                           \
  "    mad.wide.u32 %rd5, %r1, %r2, %rd5;\n"                                               \
  "    mul.wide.u32 %rd6, %r4, %r2;\n"                                                     \
  "LOOP:\n"                                                                                \
  "    setp.ge.u64 %p1, %rd5, %rd4;\n"                                                     \
  "    @%p1 bra DONE;\n"                                                                   \
  "    shl.b64 %rd7, %rd5, " SHIFT                                                         \
  ";\n"                                                                                    \
  "    add.s64 %rd8, %rd2, %rd7;\n"                                                        \
  "    add.s64 %rd9, %rd3, %rd7;\n"                                                        \
  "    add.s64 %rd10, %rd1, %rd7;\n" LOAD_A LOAD_B "    add.rn.f32 %f3, %f1, %f2;\n" STORE \
  "    add.s64 %rd5, %rd5, %rd6;\n"                                                        \
  "    bra.uni LOOP;\n"                                                                    \
  "DONE:\n"                                                                                \
  "    ret;\n"                                                                             \
  "}\n"

constexpr const char* kAddPtx = ".version 6.4\n.target sm_70\n.address_size 64\n"
    // fp32
    ROCE_BENCH_ADD_ENTRY("roce_bench_add_f32", "2", "    ld.global.f32 %f1, [%rd8];\n",
                         "    ld.global.f32 %f2, [%rd9];\n", "    st.global.f32 [%rd10], %f3;\n")
    // fp16
    ROCE_BENCH_ADD_ENTRY("roce_bench_add_f16", "1",
                         "    ld.global.b16 %h1, [%rd8];\n    cvt.f32.f16 %f1, %h1;\n",
                         "    ld.global.b16 %h2, [%rd9];\n    cvt.f32.f16 %f2, %h2;\n",
                         "    cvt.rn.f16.f32 %h3, %f3;\n    st.global.b16 [%rd10], %h3;\n")
    // bf16: the value is the top half of an f32; round to nearest even by adding 0x7fff plus
    // the lowest kept bit before truncating.
    ROCE_BENCH_ADD_ENTRY(
        "roce_bench_add_bf16", "1",
        "    ld.global.u16 %r5, [%rd8];\n    shl.b32 %r5, %r5, 16;\n    mov.b32 %f1, %r5;\n",
        "    ld.global.u16 %r6, [%rd9];\n    shl.b32 %r6, %r6, 16;\n    mov.b32 %f2, %r6;\n",
        "    mov.b32 %r7, %f3;\n    shr.u32 %r8, %r7, 16;\n    and.b32 %r8, %r8, 1;\n"
        "    add.u32 %r7, %r7, 32767;\n    add.u32 %r7, %r7, %r8;\n    shr.u32 %r7, %r7, 16;\n"
        "    st.global.u16 [%rd10], %r7;\n");
#undef ROCE_BENCH_ADD_ENTRY

}  // namespace

const char* reduction_ptx() {
  return kAddPtx;
}

CudaDriver& CudaDriver::instance() {
  static CudaDriver driver;
  return driver;
}

CudaDriver::CudaDriver() : api_(&tools::cuda_driver_api()) {
  const tools::CudaDriverApi* api = api_;
  if (!api->load_error.empty()) {
    throw BenchError("--cuda: no GPU driver on this machine (" + api->load_error +
                     "); run without --cuda for host memory");
  }
  if (const char* missing = api->first_missing(
          {"cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute",
           "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuCtxSynchronize", "cuMemAlloc_v2",
           "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemsetD8_v2",
           "cuPointerSetAttribute", "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel"})) {
    throw BenchError(std::string("libcuda.so.1 lacks ") + missing +
                     "; the NVIDIA driver is too old");
  }
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
  if (result != kSuccess) {
    throw BenchError(std::string("CUDA ") + call + " failed: " + api_->error_text(result));
  }
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

void CudaDriver::load_kernels() {
  if (module_ != nullptr) {
    return;
  }
  check(api_->cuModuleLoadData(&module_, kAddPtx), "cuModuleLoadData(reduction PTX)");
  const std::pair<DType, const char*> entries[] = {{DType::F32, "roce_bench_add_f32"},
                                                   {DType::F16, "roce_bench_add_f16"},
                                                   {DType::BF16, "roce_bench_add_bf16"}};
  for (const auto& [type, name] : entries) {
    check(api_->cuModuleGetFunction(&add_kernels_[static_cast<int>(type)], module_, name),
          "cuModuleGetFunction");
  }
}

void CudaDriver::add(DType type, std::uint64_t out, std::uint64_t a, std::uint64_t b,
                     std::size_t count) {
  if (count == 0) {
    return;
  }
  load_kernels();
  unsigned long long p_out = out;
  unsigned long long p_a = a;
  unsigned long long p_b = b;
  unsigned long long p_n = count;
  void* params[] = {&p_out, &p_a, &p_b, &p_n};
  constexpr unsigned kThreads = 256;
  const auto blocks =
      static_cast<unsigned>(std::min<std::size_t>((count + kThreads - 1) / kThreads, 4096));
  check(api_->cuLaunchKernel(add_kernels_[static_cast<int>(type)], blocks, 1, 1, kThreads, 1, 1, 0,
                             nullptr, params, nullptr),
        "cuLaunchKernel(reduction)");
  check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace roce::bench
