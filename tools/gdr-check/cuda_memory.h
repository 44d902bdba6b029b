// GPU memory for gdr-check: the CUDA runtime allocates and copies; the dma-buf export goes
// through the CUDA driver API loaded at run time (libcuda.so.1), so the program starts and
// reports plainly on machines without a GPU driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gdr {

struct GpuInfo {
  int ordinal = 0;
  std::string name;
  std::string pci_bus_id;
};

// Selects the CUDA device; std::nullopt with *error (CUDA's own words) when there is none.
std::optional<GpuInfo> open_gpu(int ordinal, std::string* error);

// A device allocation, freed on destruction. The size is rounded up to 2 MiB, the granularity
// that both nvidia-peermem pinning and dma-buf export work in.
class GpuBuffer {
 public:
  static std::unique_ptr<GpuBuffer> allocate(size_t size, std::string* error);
  ~GpuBuffer();
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;

  void* data() const noexcept { return ptr_; }
  size_t size() const noexcept { return size_; }
  bool upload(const std::vector<uint8_t>& bytes, std::string* error);
  bool download(std::vector<uint8_t>* bytes, size_t length, std::string* error);
  bool clear(std::string* error);

 private:
  GpuBuffer(void* ptr, size_t size) : ptr_(ptr), size_(size) {}
  void* ptr_;
  size_t size_;
};

// A dma-buf file descriptor for the whole buffer (cuMemGetHandleForAddressRange), or -1 with
// *error naming what is missing (driver API, export support).
int export_dmabuf(const GpuBuffer& buffer, std::string* error);

}  // namespace gdr
