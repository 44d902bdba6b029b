// A registered-memory buffer in host memory (page-aligned, pre-faulted) or in GPU memory (CUDA
// driver API). Data goes in and out through explicit copies, so the verification code is the
// same for both; the host case copies nothing when asked for a direct view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "dtype.h"

namespace roce::bench {

class Buffer {
 public:
  Buffer() = default;
  static Buffer host(std::size_t bytes);
  // Rounded up to 2 MiB so the whole allocation can be exported as one dma-buf.
  static Buffer cuda(std::size_t bytes);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  std::byte* bytes() const { return static_cast<std::byte*>(data_); }
  std::size_t size() const { return size_; }  // usable bytes as asked for
  std::size_t allocated() const { return allocated_; }
  bool is_cuda() const { return cuda_; }

  void write(std::size_t offset, const void* src, std::size_t n);
  void read(std::size_t offset, void* dst, std::size_t n) const;
  void zero();

 private:
  void release() noexcept;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t allocated_ = 0;
  bool cuda_ = false;
};

// out[i] = a[i] + b[i] over `count` elements of `type` at element offsets, on the CPU or the GPU.
void add_elements(DType type, Buffer& out, std::size_t out_at, const Buffer& a, std::size_t a_at,
                  const Buffer& b, std::size_t b_at, std::size_t count);

}  // namespace roce::bench
