// CUDA runtime allocation for gdr-check, and the dma-buf export through the tools' CUDA driver
// API table (tools/common/cuda_driver_api.h).
#include "cuda_memory.h"

#include <cuda_runtime_api.h>

#include "cuda_driver_api.h"

namespace gdr {
namespace {

constexpr size_t kGranularity = size_t{2} << 20;

std::string cuda_error(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

}  // namespace

std::optional<GpuInfo> open_gpu(int ordinal, std::string* error) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    *error = cuda_error("cudaGetDeviceCount", e);
    return std::nullopt;
  }
  if (count == 0) {
    *error = "the CUDA runtime sees no GPU";
    return std::nullopt;
  }
  if (ordinal >= count) {
    *error = "GPU " + std::to_string(ordinal) + " requested, " + std::to_string(count) + " present";
    return std::nullopt;
  }
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) {
    *error = cuda_error("cudaSetDevice", e);
    return std::nullopt;
  }
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, ordinal); e != cudaSuccess) {
    *error = cuda_error("cudaGetDeviceProperties", e);
    return std::nullopt;
  }
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal) != cudaSuccess)
    bus[0] = '\0';
  return GpuInfo{ordinal, prop.name, bus};
}

std::unique_ptr<GpuBuffer> GpuBuffer::allocate(size_t size, std::string* error) {
  size_t rounded = (size + kGranularity - 1) / kGranularity * kGranularity;
  void* ptr = nullptr;
  if (cudaError_t e = cudaMalloc(&ptr, rounded); e != cudaSuccess) {
    *error = cuda_error("cudaMalloc", e);
    return nullptr;
  }
  return std::unique_ptr<GpuBuffer>(new GpuBuffer(ptr, rounded));
}

GpuBuffer::~GpuBuffer() {
  cudaFree(ptr_);
}

bool GpuBuffer::upload(const std::vector<uint8_t>& bytes, std::string* error) {
  if (cudaError_t e = cudaMemcpy(ptr_, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
      e != cudaSuccess) {
    *error = cuda_error("cudaMemcpy to the GPU", e);
    return false;
  }
  return true;
}

bool GpuBuffer::download(std::vector<uint8_t>* bytes, size_t length, std::string* error) {
  bytes->resize(length);
  if (cudaError_t e = cudaMemcpy(bytes->data(), ptr_, length, cudaMemcpyDeviceToHost);
      e != cudaSuccess) {
    *error = cuda_error("cudaMemcpy from the GPU", e);
    return false;
  }
  return true;
}

bool GpuBuffer::clear(std::string* error) {
  if (cudaError_t e = cudaMemset(ptr_, 0, size_); e != cudaSuccess) {
    *error = cuda_error("cudaMemset", e);
    return false;
  }
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    *error = cuda_error("cudaDeviceSynchronize", e);
    return false;
  }
  return true;
}

int export_dmabuf(const GpuBuffer& buffer, std::string* error) {
  const roce::tools::CudaDriverApi& api = roce::tools::cuda_driver_api();
  if (!api.load_error.empty()) {
    *error = "cannot load the CUDA driver API: " + api.load_error;
    return -1;
  }
  if (api.cuMemGetHandleForAddressRange == nullptr) {
    *error = "the CUDA driver has no cuMemGetHandleForAddressRange (driver older than CUDA 11.7)";
    return -1;
  }
  int fd = -1;
  const auto r = api.cuMemGetHandleForAddressRange(
      &fd, reinterpret_cast<roce::tools::cuda_abi::CUdeviceptr>(buffer.data()), buffer.size(),
      roce::tools::cuda_abi::kRangeHandleDmaBufFd, 0);
  if (r != roce::tools::cuda_abi::kSuccess) {
    *error = "cuMemGetHandleForAddressRange: " + api.error_text(r) +
             "; dma-buf export needs the open NVIDIA kernel modules and Linux >= 5.12";
    return -1;
  }
  return fd;
}

}  // namespace gdr
