// A stand-in libcuda.so.1 for tests on machines without a GPU: the few driver API entry points
// vroce's gpu/memory.cpp loads, over "device memory" that the CPU cannot touch. Allocations live
// in a PROT_NONE view of a memfd; the driver's copies go through a second, writable view of the
// same memfd. Any direct CPU access to device memory by vroce therefore faults, and everything
// that must reach it through cuMemcpyHtoD/DtoH is counted. CUDA IPC works between processes that
// load this library: a handle names the exporting process's memfd and the allocation's place in
// it, and the opening process maps that part of the memfd (through /proc/PID/fd), again as a
// PROT_NONE "device" view and a writable one for its copies. The copy helper's kernel
// (vroce/copier/copy_kernel.cu) runs here as a thread that serves the same mailbox the same way
// (gpu/copy_kernel_mailbox.h); FAKE_CUDA_MPS=1 makes the device report that it is shared through
// MPS, and FAKE_CUDA_KERNEL_FAULT=1 makes that kernel fault at its first request, as a kernel
// that touches a bad address ends. Test code only; never installed.
#include "fake_cuda.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gpu/copy_kernel_mailbox.h"

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
  std::thread kernel;  // a launched kernel, until the stream is synchronised
  std::atomic<bool> kernel_done{true};
  std::atomic<bool> kernel_faulted{false};
  FakeStream() = default;
  FakeStream(const FakeStream&) = delete;
  FakeStream& operator=(const FakeStream&) = delete;
  ~FakeStream() {
    if (kernel.joinable()) {  // a kernel that ended (stopped or faulted) but was never waited for
      kernel.join();
    }
  }
};

struct FakeModule {
  int unused = 0;
};
struct FakeFunction {
  int unused = 0;
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

  // A real driver's cuIpcOpenMemHandle and cuIpcCloseMemHandle wait for the context's work,
  // which a kernel that polls never finishes: here they fail loudly instead of hanging.
  bool kernel_running() const {
    for (const auto& [stream, owned] : streams) {
      if (!owned->kernel_done) {
        return true;
      }
    }
    return false;
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
  auto owned = std::make_unique<FakeStream>();
  owned->context = current;
  owned->flags = flags;
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
  {
    std::lock_guard lock(d.mutex);
    if (d.streams.count(stream) != 1) {
      return kInvalidValue;
    }
  }
  if (stream->kernel.joinable()) {
    stream->kernel.join();  // the kernel ends when the helper sets its stop word
  }
  return kSuccess;
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
  if (d.kernel_running()) {
    std::fprintf(stderr,
                 "fake libcuda: cuIpcOpenMemHandle with a kernel running would wait for "
                 "it forever\n");
    return 999;
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
  if (d.kernel_running()) {
    std::fprintf(stderr,
                 "fake libcuda: cuIpcCloseMemHandle with a kernel running would wait for "
                 "it forever\n");
    return 999;
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

FAKE_CUDA_EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (value == nullptr || device != 0 || attribute != 133) {  // only MPS_ENABLED is asked
    return kInvalidValue;
  }
  const char* mps = std::getenv("FAKE_CUDA_MPS");
  *value = mps != nullptr && std::string(mps) == "1" ? 1 : 0;
  return kSuccess;
}

// Page-locked host memory is mapped at the same address for the device (unified addressing).
FAKE_CUDA_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* device, void* host,
                                                       unsigned int flags) {
  if (device == nullptr || flags != 0 || !driver().is_pinned(host, 1)) {
    return kInvalidValue;
  }
  *device = reinterpret_cast<CUdeviceptr>(host);
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuModuleLoadData(FakeModule** module, const void* image) {
  static FakeModule loaded;
  if (module == nullptr || image == nullptr || current != &driver().context) {
    return kInvalidValue;
  }
  *module = &loaded;
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuModuleGetFunction(FakeFunction** function, FakeModule* module,
                                              const char* name) {
  static FakeFunction copy_kernel;
  if (function == nullptr || module == nullptr || std::string(name) != "vroce_copy_kernel") {
    return 500;  // CUDA_ERROR_NOT_FOUND
  }
  *function = &copy_kernel;
  return kSuccess;
}

namespace {

using namespace vroce::gpu::copier;

// The copy kernel, as a thread: polls the request line, copies through the writable view of the
// "device" memory, answers in the reply line. It naps between empty polls, where the GPU's
// kernel spins, so that it leaves the test machine's CPUs to the test.
// Returns false when it faulted.
bool run_copy_kernel(KernelMailbox* box, uint8_t* staging, uint32_t seen) {
  Driver& d = driver();
  const char* fault = std::getenv("FAKE_CUDA_KERNEL_FAULT");
  const bool faults = fault != nullptr && std::string(fault) == "1";
  for (;;) {
    const uint32_t want = seen + 1;
    Chunk request[kLineChunks];
    bool complete = true;
    for (uint32_t c = 0; c < kLineChunks; ++c) {
      request[c] = load_chunk(box->request, c);
      complete = complete && request[c].words[0] == want;
    }
    if (!complete) {
      if (std::atomic_ref<uint32_t>(box->stop).load(std::memory_order_acquire) != 0) {
        return true;
      }
      usleep(20);
      continue;
    }
    if (faults) {
      return false;  // no answer, and the stream reports the fault
    }
    seen = want;
    const uint32_t op = request[0].words[1];
    const uint32_t length = request[0].words[2];
    const uint64_t address = uint64_t{request[1].words[1]} | (uint64_t{request[1].words[2]} << 32);
    Chunk reply[kLineChunks] = {};
    for (Chunk& chunk : reply) {
      chunk.words[0] = seen;
    }
    {
      std::lock_guard lock(d.mutex);
      if (d.find(address, length) == d.allocations.end()) {
        std::fprintf(stderr, "fake copy kernel: 0x%llx (+%u) is not device memory\n",
                     static_cast<unsigned long long>(address), length);
        std::abort();  // a real kernel faults
      }
      uint8_t* device = d.writable(address);
      for (uint32_t k = 0; k < length; ++k) {
        uint8_t* slot =
            length <= kInlineBytes
                ? reinterpret_cast<uint8_t*>(
                      &(op == kKernelToDevice ? request
                                              : reply)[kFirstDataChunk + k / kDataBytesPerChunk]
                           .words[1]) +
                      k % kDataBytesPerChunk
                : staging + k;
        if (op == kKernelToDevice) {
          device[k] = *slot;
        } else {
          *slot = device[k];
        }
      }
    }
    for (uint32_t c = 0; c < reply_chunks(op, length); ++c) {
      store_chunk(box->reply, c, reply[c]);
    }
  }
}

}  // namespace

FAKE_CUDA_EXPORT CUresult cuLaunchKernel(FakeFunction* function, unsigned int grid_x,
                                         unsigned int grid_y, unsigned int grid_z,
                                         unsigned int block_x, unsigned int, unsigned int,
                                         unsigned int, FakeStream* stream, void** params,
                                         void** extra) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  if (function == nullptr || grid_x != 1 || grid_y != 1 || grid_z != 1 || block_x == 0 ||
      params == nullptr || extra != nullptr || d.streams.count(stream) == 0 ||
      stream->kernel.joinable() || current != stream->context) {
    return kInvalidValue;
  }
  auto* box = reinterpret_cast<KernelMailbox*>(*static_cast<CUdeviceptr*>(params[0]));
  auto* staging = reinterpret_cast<uint8_t*>(*static_cast<CUdeviceptr*>(params[1]));
  const uint32_t seen = *static_cast<uint32_t*>(params[2]);
  stream->kernel_done = false;
  stream->kernel = std::thread([stream, box, staging, seen] {
    stream->kernel_faulted = !run_copy_kernel(box, staging, seen);
    stream->kernel_done = true;
  });
  return kSuccess;
}

FAKE_CUDA_EXPORT CUresult cuStreamQuery(FakeStream* stream) {
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  if (d.streams.count(stream) == 0) {
    return kInvalidValue;
  }
  if (!stream->kernel_done) {
    return 600;  // CUDA_ERROR_NOT_READY
  }
  return stream->kernel_faulted ? 719 : kSuccess;  // CUDA_ERROR_LAUNCH_FAILED
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
