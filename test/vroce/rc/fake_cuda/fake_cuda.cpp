// A stand-in libcuda.so.1 for tests on machines without a GPU: the few driver API entry points
// vroce's gpu/memory.cpp loads, over "device memory" that the CPU cannot touch. Allocations live
// in a PROT_NONE view of a memfd; the driver's copies go through a second, writable view of the
// same memfd. Any direct CPU access to device memory by vroce therefore faults, and everything
// that must reach it through cuMemcpyHtoD/DtoH is counted. CUDA IPC works between processes that
// load this library: a handle names the exporting process's memfd and the allocation's place in
// it, and the opening process maps that part of the memfd (through /proc/PID/fd), again as a
// PROT_NONE "device" view and a writable one for its copies. Test code only; never installed.
#include "fake_cuda.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#define FAKE_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr size_t kArena = size_t{512} << 20;

}  // namespace

struct FakeContext {
  int ordinal = 0;
};

// A stream: which context it belongs to and whether it is non-blocking (the only kind a copy
// engine that must not wait behind the application's default stream may use).
struct FakeStream {
  FakeContext* context = nullptr;
  unsigned int flags = 0;
};

namespace {

using IpcHandle = FakeIpcHandle;
constexpr uint64_t kIpcMagic = 0x666b697063ULL;

// An allocation opened from another process: its two views of the exporter's memfd.
struct Opened {
  uint8_t* device = nullptr;
  uint8_t* host = nullptr;
  size_t size = 0;
};

struct Driver {
  std::mutex mutex;
  int arena_fd = -1;          // kept open so that other processes can open allocations
  uint8_t* device = nullptr;  // PROT_NONE: what device pointers point into
  uint8_t* host = nullptr;    // the same pages, writable: what the copies use
  size_t next = 0;
  std::map<uint64_t, size_t> allocations;  // start -> size (own and opened)
  std::map<uint64_t, Opened> opened;       // start -> views, for allocations of other processes
  unsigned long long copies = 0;
  unsigned long long stream_copies = 0;  // of which on a non-blocking stream, page-locked side
  std::map<uint64_t, size_t> pinned;     // cuMemAllocHost allocations: start -> size
  unsigned long long bytes = 0;
  std::map<FakeStream*, std::unique_ptr<FakeStream>> streams;
  FakeContext context;

  Driver() {
    int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(kArena)) != 0) {
      return;
    }
    void* d = mmap(nullptr, kArena, PROT_NONE, MAP_SHARED, fd, 0);
    void* h = mmap(nullptr, kArena, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    arena_fd = fd;
    if (d != MAP_FAILED && h != MAP_FAILED) {
      device = static_cast<uint8_t*>(d);
      host = static_cast<uint8_t*>(h);
    }
  }

  // The allocation holding [addr, addr + length), or allocations.end().
  std::map<uint64_t, size_t>::iterator find(uint64_t addr, size_t length) {
    auto it = allocations.upper_bound(addr);
    if (it == allocations.begin()) {
      return allocations.end();
    }
    --it;
    if (addr - it->first > it->second || length > it->second - (addr - it->first)) {
      return allocations.end();
    }
    return it;
  }

  bool is_pinned(const void* ptr, size_t length) const {
    auto addr = reinterpret_cast<uint64_t>(ptr);
    auto it = pinned.upper_bound(addr);
    if (it == pinned.begin()) {
      return false;
    }
    --it;
    return addr - it->first <= it->second && length <= it->second - (addr - it->first);
  }

  uint8_t* writable(uint64_t addr) {
    auto it = opened.upper_bound(addr);
    if (it != opened.begin()) {
      --it;
      if (addr - it->first < it->second.size) {
        return it->second.host + (addr - it->first);
      }
    }
    return host + (addr - reinterpret_cast<uint64_t>(device));
  }
};

Driver& driver() {
  static Driver d;
  return d;
}

thread_local FakeContext* current = nullptr;

}  // namespace

FAKE_CUDA_EXPORT CUresult cuInit(unsigned int) {
  return driver().device ? kSuccess : 100;
}

FAKE_CUDA_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  *name = error == kSuccess ? "CUDA_SUCCESS" : "CUDA_ERROR_INVALID_VALUE";
  return kSuccess;
}

// Memory type 2 (device) for addresses inside an allocation, 0 (unknown) otherwise, as the real
// driver's cuPointerGetAttributes reports host memory it does not know.
FAKE_CUDA_EXPORT CUresult cuPointerGetAttributes(unsigned int count, int* attributes, void** data,
                                                 CUdeviceptr ptr) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  auto it = d.find(ptr, 1);
  bool known = it != d.allocations.end();
  for (unsigned int i = 0; i < count; ++i) {
    switch (attributes[i]) {
      case 1:  // CONTEXT
        *static_cast<FakeContext**>(data[i]) = known ? &d.context : nullptr;
        break;
      case 2:  // MEMORY_TYPE
        *static_cast<unsigned int*>(data[i]) = known ? 2u : 0u;
        break;
      case 9:  // DEVICE_ORDINAL
        *static_cast<int*>(data[i]) = known ? 0 : -1;
        break;
      case 11:  // RANGE_START_ADDR
        *static_cast<CUdeviceptr*>(data[i]) = known ? it->first : 0;
        break;
      case 12:  // RANGE_SIZE
        *static_cast<size_t*>(data[i]) = known ? it->second : 0;
        break;
      default:
        return kInvalidValue;
    }
  }
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuDeviceGet(int* device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? kSuccess : kInvalidValue;
}

FAKE_CUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(FakeContext** ctx, int) {
  *ctx = &driver().context;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuCtxGetCurrent(FakeContext** ctx) {
  *ctx = current;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuCtxSetCurrent(FakeContext* ctx) {
  current = ctx;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  if (current != &d.context || d.find(dst, bytes) == d.allocations.end()) {
    return kInvalidValue;  // no context current, or not device memory
  }
  std::memcpy(d.writable(dst), src, bytes);
  ++d.copies;
  d.bytes += bytes;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  if (current != &d.context || d.find(src, bytes) == d.allocations.end()) {
    return kInvalidValue;
  }
  std::memcpy(dst, d.writable(src), bytes);
  ++d.copies;
  d.bytes += bytes;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuStreamCreate(FakeStream** stream, unsigned int flags) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  if (current != &d.context) {
    return kInvalidValue;
  }
  auto owned = std::make_unique<FakeStream>(FakeStream{current, flags});
  *stream = owned.get();
  d.streams.emplace(owned.get(), std::move(owned));
  return kSuccess;
}

// fake_cuda_hold_stream_syncs(): while held, cuStreamSynchronize blocks, as a real driver's does
// when the application holds its lock (the deadlock vroce's stall watchdog reports).
std::mutex hold_mutex;
std::condition_variable hold_released;
bool hold_syncs = false;

FAKE_CUDA_EXPORT void fake_cuda_hold_stream_syncs(int hold) {
  {
    std::lock_guard lock(hold_mutex);
    hold_syncs = hold != 0;
  }
  hold_released.notify_all();
}

FAKE_CUDA_EXPORT CUresult cuStreamSynchronize(FakeStream* stream) {
  {
    std::unique_lock lock(hold_mutex);
    hold_released.wait(lock, [] { return !hold_syncs; });
  }
  // The same hold for another process (vroce's copy helper): while the file that
  // FAKE_CUDA_HOLD_WHILE names exists.
  if (const char* hold_file = std::getenv("FAKE_CUDA_HOLD_WHILE"); hold_file != nullptr) {
    while (access(hold_file, F_OK) == 0) {
      usleep(10000);
    }
  }
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  return d.streams.count(stream) == 1 ? kSuccess : kInvalidValue;
}

// Async copies complete at once here; a real driver completes them by cuStreamSynchronize.
FAKE_CUDA_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes,
                                               FakeStream* stream) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  if (current != &d.context || d.find(dst, bytes) == d.allocations.end() ||
      d.streams.count(stream) == 0 || stream->context != current) {
    return kInvalidValue;
  }
  std::memcpy(d.writable(dst), src, bytes);
  ++d.copies;
  d.stream_copies += (stream->flags & 1U) != 0 && d.is_pinned(src, bytes) ? 1U : 0U;
  d.bytes += bytes;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes,
                                               FakeStream* stream) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  if (current != &d.context || d.find(src, bytes) == d.allocations.end() ||
      d.streams.count(stream) == 0 || stream->context != current) {
    return kInvalidValue;
  }
  std::memcpy(dst, d.writable(src), bytes);
  ++d.copies;
  d.stream_copies += (stream->flags & 1U) != 0 && d.is_pinned(dst, bytes) ? 1U : 0U;
  d.bytes += bytes;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuMemAllocHost_v2(void** ptr, size_t bytes) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  void* p = bytes == 0 ? nullptr : std::malloc(bytes);  // "page-locked": only the bookkeeping
  if (p == nullptr || current != &d.context) {
    std::free(p);
    return kInvalidValue;
  }
  *ptr = p;
  d.pinned[reinterpret_cast<uint64_t>(p)] = bytes;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  size_t size = (bytes + 4095) & ~size_t{4095};
  if (d.device == nullptr || bytes == 0 || d.next + size > kArena) {
    return kInvalidValue;
  }
  *ptr = reinterpret_cast<CUdeviceptr>(d.device + d.next);
  d.allocations[*ptr] = bytes;
  d.next += size;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  return d.allocations.erase(ptr) == 1 ? kSuccess : kInvalidValue;
}

// The driver's CUipcMemHandle is 64 chars, aligned to 1 byte: written with memcpy.
FAKE_CUDA_EXPORT CUresult cuIpcGetMemHandle(void* handle, CUdeviceptr ptr) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  auto it = d.allocations.find(ptr);
  if (it == d.allocations.end() || d.opened.count(ptr) != 0) {
    return kInvalidValue;  // not the start of an allocation of this process
  }
  IpcHandle exported{};
  exported.magic = kIpcMagic;
  exported.pid = getpid();
  exported.fd = d.arena_fd;
  exported.offset = ptr - reinterpret_cast<uint64_t>(d.device);
  exported.size = it->second;
  std::memcpy(handle, &exported, sizeof exported);
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* ptr, IpcHandle handle, unsigned int) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  if (handle.magic != kIpcMagic || handle.pid == getpid() || current != &d.context) {
    return kInvalidValue;  // as the real driver, no opening in the exporting process
  }
  std::string path = "/proc/" + std::to_string(handle.pid) + "/fd/" + std::to_string(handle.fd);
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return kInvalidValue;
  }
  size_t size = (handle.size + 4095) & ~size_t{4095};
  void* dv = mmap(nullptr, size, PROT_NONE, MAP_SHARED, fd, static_cast<off_t>(handle.offset));
  void* hv = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                  static_cast<off_t>(handle.offset));
  close(fd);
  if (dv == MAP_FAILED || hv == MAP_FAILED) {
    return kInvalidValue;
  }
  auto start = reinterpret_cast<uint64_t>(dv);
  d.opened[start] = Opened{static_cast<uint8_t*>(dv), static_cast<uint8_t*>(hv), size};
  d.allocations[start] = handle.size;
  *ptr = start;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr ptr) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  auto it = d.opened.find(ptr);
  if (it == d.opened.end()) {
    return kInvalidValue;
  }
  munmap(it->second.device, it->second.size);
  munmap(it->second.host, it->second.size);
  d.opened.erase(it);
  d.allocations.erase(ptr);
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuMemHostRegister_v2(void* ptr, size_t bytes, unsigned int) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  if (ptr == nullptr || bytes == 0 || current != &d.context) {
    return kInvalidValue;
  }
  d.pinned[reinterpret_cast<uint64_t>(ptr)] = bytes;
  return kSuccess;
}

// For the tests: how many copies (and bytes) went through the driver.
FAKE_CUDA_EXPORT unsigned long long fake_cuda_copies() {
  return driver().copies;
}
FAKE_CUDA_EXPORT unsigned long long fake_cuda_stream_copies() {
  return driver().stream_copies;
}
FAKE_CUDA_EXPORT unsigned long long fake_cuda_bytes() {
  return driver().bytes;
}
