// Host and GPU buffers.
#include "buffer.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "cuda_driver.h"
#include "errors.h"

namespace roce::bench {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kGpuGranule = std::size_t{2} << 20;

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

std::uint64_t device_address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

}  // namespace

Buffer Buffer::host(std::size_t bytes) {
  Buffer b;
  b.allocated_ = round_up(std::max<std::size_t>(bytes, 1), kPage);
  b.data_ = std::aligned_alloc(kPage, b.allocated_);
  if (b.data_ == nullptr) {
    throw BenchError("cannot allocate " + std::to_string(b.allocated_) + " bytes of host memory");
  }
  // Touch every page now so first-touch faults never land inside a measurement.
  std::memset(b.data_, 0, b.allocated_);
  b.size_ = bytes;
  return b;
}

Buffer Buffer::cuda(std::size_t bytes) {
  Buffer b;
  b.cuda_ = true;
  b.allocated_ = round_up(std::max<std::size_t>(bytes, 1), kGpuGranule);
  auto& driver = CudaDriver::instance();
  b.data_ = reinterpret_cast<void*>(static_cast<std::uintptr_t>(driver.alloc(b.allocated_)));
  b.size_ = bytes;
  driver.zero(device_address(b.data_), b.allocated_);
  return b;
}

Buffer::~Buffer() {
  release();
}

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      allocated_(std::exchange(other.allocated_, 0)),
      cuda_(std::exchange(other.cuda_, false)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    allocated_ = std::exchange(other.allocated_, 0);
    cuda_ = std::exchange(other.cuda_, false);
  }
  return *this;
}

void Buffer::release() noexcept {
  if (data_ == nullptr) {
    return;
  }
  if (cuda_) {
    CudaDriver::instance().free(device_address(data_));
  } else {
    std::free(data_);
  }
  data_ = nullptr;
}

void Buffer::write(std::size_t offset, const void* src, std::size_t n) {
  if (cuda_) {
    CudaDriver::instance().copy_to_device(device_address(bytes() + offset), src, n);
  } else {
    std::memcpy(bytes() + offset, src, n);
  }
}

void Buffer::read(std::size_t offset, void* dst, std::size_t n) const {
  if (cuda_) {
    CudaDriver::instance().copy_to_host(dst, device_address(bytes() + offset), n);
  } else {
    std::memcpy(dst, bytes() + offset, n);
  }
}

void Buffer::zero() {
  if (cuda_) {
    CudaDriver::instance().zero(device_address(data_), allocated_);
  } else {
    std::memset(data_, 0, allocated_);
  }
}

void add_elements(DType type, Buffer& out, std::size_t out_at, const Buffer& a, std::size_t a_at,
                  const Buffer& b, std::size_t b_at, std::size_t count) {
  const std::size_t size = dtype_bytes(type);
  if (out.is_cuda()) {
    CudaDriver::instance().add(type, device_address(out.bytes() + out_at * size),
                               device_address(a.bytes() + a_at * size),
                               device_address(b.bytes() + b_at * size), count);
    return;
  }
  if (type == DType::F32) {
    float* o = reinterpret_cast<float*>(out.data()) + out_at;
    const float* x = reinterpret_cast<const float*>(a.data()) + a_at;
    const float* y = reinterpret_cast<const float*>(b.data()) + b_at;
    for (std::size_t i = 0; i < count; ++i) {
      o[i] = x[i] + y[i];
    }
    return;
  }
  std::byte* o = out.bytes() + out_at * size;
  const std::byte* x = a.bytes() + a_at * size;
  const std::byte* y = b.bytes() + b_at * size;
  for (std::size_t i = 0; i < count; ++i) {
    store_element(type, o, i, load_element(type, x, i) + load_element(type, y, i));
  }
}

}  // namespace roce::bench
