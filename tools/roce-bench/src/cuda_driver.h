// The CUDA driver API as roce-bench uses it, over the tools' one loader
// (tools/common/cuda_driver_api.h: loaded at run time from libcuda.so.1), so the tool builds and
// runs on machines without CUDA. The driver API (rather than libcudart)
// because it is the one stable ABI every GPU host has, and it alone offers the dma-buf export
// (cuMemGetHandleForAddressRange) and PTX loading used for the all-reduce's GPU reduction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dtype.h"

namespace roce::tools {
struct CudaDriverApi;
}  // namespace roce::tools

namespace roce::bench {

// The PTX of the all-reduce's GPU reductions (out[i] = a[i] + b[i] for fp32, fp16 and bf16),
// JIT-compiled by the driver.
const char* reduction_ptx();

class CudaDriver {
 public:
  // Loads the driver and initialises it; throws BenchError with a plain "no GPU" explanation
  // when libcuda.so.1 is missing, cuInit fails or there is no device.
  static CudaDriver& instance();

  int device_count() const { return device_count_; }
  // Makes `ordinal`'s primary context current on the calling thread.
  void use_device(int ordinal);
  int device() const { return device_; }
  std::string device_name() const;
  int compute_capability_major() const;
  bool dmabuf_supported() const;

  std::uint64_t alloc(std::size_t bytes);
  void free(std::uint64_t ptr) noexcept;
  void copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes);
  void copy_to_host(void* dst, std::uint64_t src, std::size_t bytes);
  void zero(std::uint64_t ptr, std::size_t bytes);
  // A dma-buf fd for [ptr, ptr+bytes) (page-aligned); the caller closes it.
  int export_dmabuf(std::uint64_t ptr, std::size_t bytes);
  // out[i] = a[i] + b[i] over `count` elements of `type` on the GPU, then waits for it.
  void add(DType type, std::uint64_t out, std::uint64_t a, std::uint64_t b, std::size_t count);

 private:
  CudaDriver();
  ~CudaDriver() = default;
  void load_kernels();
  void check(int result, const char* call) const;

  const tools::CudaDriverApi* api_;
  int device_count_ = 0;
  int device_ = -1;
  void* context_ = nullptr;
  void* module_ = nullptr;
  void* add_kernels_[3] = {};  // indexed by DType
};

}  // namespace roce::bench
