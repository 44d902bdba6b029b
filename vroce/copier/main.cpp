// vroce-gpu-copier: the process that makes vroce's copies to and from CUDA memory when
// VROCE_GPU_COPIES=helper (the default). vroce starts one per application process at its first
// registration of CUDA memory (gpu/copy_helper.cpp) and hands it, as descriptors 3 and 4, the
// control socket and the shared channel (gpu/copier_protocol.h). It opens each registered
// allocation through CUDA IPC and copies between it and the channel's staging buffer in a context
// of its own, so none of the application's threads can hold a lock its copies need. It exits when
// the application's end of the socket closes (the application exited). Not meant to be run by
// hand.
//
// Small copies can skip this process's thread: asked to (and under MPS, by default), it starts
// its copy kernel (copy_kernel.cu) on the GPU, which takes requests straight from the channel's
// mailbox (gpu/copy_kernel_mailbox.h), and stops it again after VROCE_GPU_COPY_KERNEL_IDLE_MS
// without one, so that an idle application has no kernel of vroce's polling on its GPU.
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "gpu/copier_protocol.h"
#include "gpu/cuda_driver.h"
#include "util/log.h"

namespace vroce::gpu::copier {
// The copy kernel's fatbin (copy_kernel.cu), generated at build time; empty where nvcc was not
// found.
extern const unsigned char kCopyKernelImage[];
extern const std::size_t kCopyKernelImage_size;
}  // namespace vroce::gpu::copier

namespace {

using namespace vroce;
using namespace vroce::gpu;

constexpr uint64_t kParentCheckNs = 100'000'000;
// While the kernel runs, the thread wakes this often to see whether it is idle or has failed.
constexpr uint64_t kKernelWatchNs = 1'000'000;
constexpr unsigned kKernelThreads = 256;

struct Device {
  cuda::CUcontext context = nullptr;
  cuda::CUstream stream = nullptr;
};

struct Region {
  cuda::CUdeviceptr base = 0;
  uint64_t size = 0;
  int ordinal = 0;
};

class Copier {
 public:
  Copier(const CudaDriver& driver, copier::Channel& channel) : driver_(driver), channel_(channel) {}

  void serve_control(int socket);
  cuda::CUresult copy();
  // After a copy the client asked the kernel for: starts it on that copy's device if it may run.
  void start_kernel();
  // While the kernel runs, between requests: stops it once idle, and notices one that failed.
  void watch_kernel();
  bool kernel_running() const { return channel_.kernel_running.load(std::memory_order_relaxed); }
  // Before the helper exits: the kernel ends as it does when idle, rather than being torn down
  // with the process by the driver (or, under MPS, by the MPS server).
  void end() {
    if (kernel_running()) {
      stop_kernel(true);
    }
  }

 private:
  // Loads the kernel for `device`'s context; false with *why when it cannot run there.
  bool prepare_kernel(int ordinal, std::string* why);
  // client_gone: the application has exited and may have left the gate taken.
  void stop_kernel(bool client_gone);
  // The device's context (its primary context, retained for the life of the helper) made current
  // on this thread, with a non-blocking stream; the staging buffer is page-locked on first use.
  cuda::CUresult use_device(int ordinal, Device** device, std::string* what);
  // use_device() for a caller that needs only the context current.
  cuda::CUresult make_current(int ordinal) {
    Device* device = nullptr;
    std::string what;
    return use_device(ordinal, &device, &what);
  }
  copier::ControlReply open(const copier::ControlRequest& request);

  const CudaDriver& driver_;
  copier::Channel& channel_;
  std::map<int, Device> devices_;
  std::map<uint32_t, Region> regions_;
  uint32_t next_region_ = 1;
  int current_ = -1;
  bool staging_registered_ = false;
  bool channel_mapped_ = false;  // the whole channel is page-locked and mapped for the GPU
  int last_copy_ordinal_ = -1;
  std::string channel_unmapped_;  // why the channel is not mapped for the GPU, if it is not
  // The copy kernel: loaded for one device, the first it was asked for. Once it cannot run
  // (Off), it is not tried again.
  enum class KernelState { Untried, Loaded, Off };
  KernelState kernel_state_ = KernelState::Untried;
  int kernel_ordinal_ = -1;
  cuda::CUmodule module_ = nullptr;
  cuda::CUfunction function_ = nullptr;
  cuda::CUstream kernel_stream_ = nullptr;
  cuda::CUdeviceptr mailbox_on_device_ = 0;
  cuda::CUdeviceptr staging_on_device_ = 0;
  uint32_t watched_sequence_ = 0;
  uint64_t idle_since_ns_ = 0;
};

uint32_t request_sequence(const copier::KernelMailbox& mailbox) {
  return std::atomic_ref<const uint32_t>(mailbox.request.words[0]).load(std::memory_order_acquire);
}

cuda::CUresult Copier::use_device(int ordinal, Device** device, std::string* what) {
  auto it = devices_.find(ordinal);
  if (it == devices_.end()) {
    Device created;
    cuda::CUdevice handle = 0;
    cuda::CUresult rc = driver_.device_get(&handle, ordinal);
    *what = "cuDeviceGet";
    if (rc == cuda::kSuccess) {
      rc = driver_.primary_ctx_retain(&created.context, handle);
      *what = "cuDevicePrimaryCtxRetain";
    }
    if (rc == cuda::kSuccess) {
      rc = driver_.ctx_set_current(created.context);
      *what = "cuCtxSetCurrent";
    }
    if (rc == cuda::kSuccess) {
      rc = driver_.stream_create(&created.stream, cuda::kStreamNonBlocking);
      *what = "cuStreamCreate";
    }
    if (rc != cuda::kSuccess) {
      return rc;
    }
    current_ = ordinal;
    it = devices_.emplace(ordinal, created).first;
    if (!staging_registered_) {
      // Portable: page-locked for every context of this process. Mapped: the copy kernel reads
      // and writes the mailbox and the staging buffer where they are. Without it the copies
      // still work, through the driver's own staging, a little slower, and without the kernel.
      rc = driver_.mem_host_register(
          &channel_, sizeof(copier::Channel),
          cuda::kMemHostRegisterPortable | cuda::kMemHostRegisterDeviceMap);
      channel_mapped_ = rc == cuda::kSuccess;
      if (!channel_mapped_) {
        channel_unmapped_ = "the channel cannot be mapped for the GPU (cuMemHostRegister: " +
                            driver_.error_text(rc) + ")";
        rc = driver_.mem_host_register(channel_.staging, copier::kStagingBytes,
                                       cuda::kMemHostRegisterPortable);
      }
      staging_registered_ = rc == cuda::kSuccess;
      if (!staging_registered_) {
        VROCE_LOG(Info, "vroce-gpu-copier: the staging buffer stays pageable: %s",
                  driver_.error_text(rc).c_str());
      }
    }
  }
  if (current_ != ordinal) {
    *what = "cuCtxSetCurrent";
    if (cuda::CUresult rc = driver_.ctx_set_current(it->second.context); rc != cuda::kSuccess) {
      return rc;
    }
    current_ = ordinal;
  }
  *device = &it->second;
  return cuda::kSuccess;
}

copier::ControlReply Copier::open(const copier::ControlRequest& request) {
  copier::ControlReply reply;
  Device* device = nullptr;
  std::string what;
  cuda::CUresult rc = use_device(request.device_ordinal, &device, &what);
  cuda::CUdeviceptr base = 0;
  if (rc == cuda::kSuccess) {
    what = "cuIpcOpenMemHandle";
    rc = driver_.ipc_open_mem_handle(&base, request.handle, cuda::kIpcMemLazyEnablePeerAccess);
  }
  reply.status = rc;
  if (rc != cuda::kSuccess) {
    std::snprintf(reply.detail, sizeof reply.detail, "%s on device %d failed with %s", what.c_str(),
                  request.device_ordinal, driver_.error_text(rc).c_str());
    return reply;
  }
  reply.region = next_region_++;
  reply.device_address = base;
  regions_[reply.region] = Region{base, request.size, request.device_ordinal};
  return reply;
}

void Copier::serve_control(int socket) {
  // Opening and closing CUDA IPC memory wait for the context's work to finish, and the kernel
  // never finishes: it is stopped first (the client, inside this request, is in no kernel copy),
  // and the next small copy starts it again.
  if (kernel_running()) {
    stop_kernel(false);
  }
  copier::ControlRequest request;
  copier::ControlReply reply;
  if (::recv(socket, &request, sizeof request, MSG_DONTWAIT) !=
      static_cast<ssize_t>(sizeof request)) {
    reply.status = -EPROTO;
    std::snprintf(reply.detail, sizeof reply.detail, "no control request came with the signal");
  } else if (request.op == copier::ControlOp::Open) {
    reply = open(request);
  } else if (request.op == copier::ControlOp::Close) {
    if (auto it = regions_.find(request.region); it != regions_.end()) {
      if (make_current(it->second.ordinal) == cuda::kSuccess) {
        driver_.ipc_close_mem_handle(it->second.base);
      }
      regions_.erase(it);
    }
  } else {
    reply.status = -EPROTO;
    std::snprintf(reply.detail, sizeof reply.detail, "unknown control request %u",
                  static_cast<unsigned>(request.op));
  }
  ::send(socket, &reply, sizeof reply, MSG_NOSIGNAL);
}

cuda::CUresult Copier::copy() {
  auto it = regions_.find(channel_.region);
  const uint64_t offset = channel_.offset;
  const uint64_t length = channel_.length;
  if (it == regions_.end() || length > copier::kStagingBytes || offset > it->second.size ||
      length > it->second.size - offset) {
    return cuda::kErrorInvalidValue;
  }
  Device* device = nullptr;
  std::string what;
  if (cuda::CUresult rc = use_device(it->second.ordinal, &device, &what); rc != cuda::kSuccess) {
    return rc;
  }
  last_copy_ordinal_ = it->second.ordinal;
  const cuda::CUdeviceptr at = it->second.base + offset;
  cuda::CUresult rc = channel_.op == copier::Op::ToDevice
                          ? driver_.memcpy_htod_async(at, channel_.staging, length, device->stream)
                          : driver_.memcpy_dtoh_async(channel_.staging, at, length, device->stream);
  return rc == cuda::kSuccess ? driver_.stream_synchronize(device->stream) : rc;
}

bool Copier::prepare_kernel(int ordinal, std::string* why) {
  if (channel_.kernel_mode == GpuCopyKernel::Off) {
    *why = "VROCE_GPU_COPY_KERNEL=off";
    return false;
  }
  if (copier::kCopyKernelImage_size == 0) {
    *why =
        "this vroce-gpu-copier was built without it (no nvcc at build time, or "
        "ROCE_COPY_KERNEL=OFF)";
    return false;
  }
  if (!driver_.can_run_kernels()) {
    *why = "the CUDA driver lacks the entry points that launch it";
    return false;
  }
  Device* device = nullptr;
  std::string what;
  cuda::CUresult rc = use_device(ordinal, &device, &what);
  if (rc == cuda::kSuccess && !channel_mapped_) {
    *why = channel_unmapped_;
    return false;
  }
  if (rc == cuda::kSuccess && channel_.kernel_mode == GpuCopyKernel::Auto) {
    cuda::CUdevice handle = 0;
    int mps = 0;
    what = "cuDeviceGetAttribute";
    rc = driver_.device_get(&handle, ordinal);
    if (rc == cuda::kSuccess) {
      rc = driver_.device_get_attribute(&mps, cuda::kDeviceAttributeMpsEnabled, handle);
    }
    if (rc == cuda::kSuccess && mps == 0) {
      *why =
          "the GPU is not shared through MPS, and without MPS a kernel that polls takes turns "
          "with the application's kernels (VROCE_GPU_COPY_KERNEL=on starts it anyway)";
      return false;
    }
  }
  if (rc == cuda::kSuccess) {
    what = "cuModuleLoadData";
    rc = driver_.module_load_data(&module_, copier::kCopyKernelImage);
  }
  if (rc == cuda::kSuccess) {
    what = "cuModuleGetFunction";
    rc = driver_.module_get_function(&function_, module_, "vroce_copy_kernel");
  }
  if (rc == cuda::kSuccess) {
    what = "cuStreamCreate";
    rc = driver_.stream_create(&kernel_stream_, cuda::kStreamNonBlocking);
  }
  if (rc == cuda::kSuccess) {
    what = "cuMemHostGetDevicePointer";
    rc = driver_.mem_host_get_device_pointer(&mailbox_on_device_, &channel_.kernel, 0);
  }
  if (rc == cuda::kSuccess) {
    rc = driver_.mem_host_get_device_pointer(&staging_on_device_, channel_.staging, 0);
  }
  if (rc != cuda::kSuccess) {
    *why =
        what + " on device " + std::to_string(ordinal) + " failed with " + driver_.error_text(rc);
    return false;
  }
  kernel_ordinal_ = ordinal;
  return true;
}

void Copier::start_kernel() {
  const int ordinal = last_copy_ordinal_;
  if (kernel_state_ == KernelState::Off || kernel_running() || ordinal < 0 ||
      (kernel_state_ == KernelState::Loaded && ordinal != kernel_ordinal_)) {
    return;  // running already, or loaded for another device: that one's copies use the engine
  }
  if (kernel_state_ == KernelState::Untried) {
    std::string why;
    if (!prepare_kernel(ordinal, &why)) {
      VROCE_LOG(Info,
                "vroce-gpu-copier: no copy kernel, every copy goes through the copy engine: %s",
                why.c_str());
      kernel_state_ = KernelState::Off;
      return;
    }
    kernel_state_ = KernelState::Loaded;
  }
  uint32_t seen = request_sequence(channel_.kernel);
  std::atomic_ref<uint32_t>(channel_.kernel.stop).store(0, std::memory_order_release);
  void* params[] = {&mailbox_on_device_, &staging_on_device_, &seen};
  cuda::CUresult rc = make_current(ordinal);
  if (rc == cuda::kSuccess) {
    rc = driver_.launch_kernel(function_, 1, 1, 1, kKernelThreads, 1, 1, 0, kernel_stream_, params,
                               nullptr);
  }
  if (rc != cuda::kSuccess) {
    VROCE_LOG(Warn,
              "vroce-gpu-copier: the copy kernel did not start on device %d (%s); copies go "
              "through the copy engine",
              ordinal, driver_.error_text(rc).c_str());
    kernel_state_ = KernelState::Off;
    return;
  }
  watched_sequence_ = seen;
  idle_since_ns_ = copier::monotonic_ns();
  channel_.kernel_device = ordinal;
  channel_.kernel_running.store(1, std::memory_order_seq_cst);
}

void Copier::stop_kernel(bool client_gone) {
  uint32_t free_gate = 0;
  if (!channel_.kernel_gate.compare_exchange_strong(free_gate, 2, std::memory_order_seq_cst) &&
      !client_gone) {
    return;  // the client is in a copy; the next watch tries again
  }
  std::atomic_ref<uint32_t>(channel_.kernel.stop).store(1, std::memory_order_release);
  cuda::CUresult rc = make_current(kernel_ordinal_);
  if (rc == cuda::kSuccess) {
    rc = driver_.stream_synchronize(kernel_stream_);
  }
  if (rc != cuda::kSuccess) {
    channel_.kernel_failed.store(rc, std::memory_order_seq_cst);
  }
  channel_.kernel_running.store(0, std::memory_order_seq_cst);
  channel_.kernel_gate.store(0, std::memory_order_seq_cst);
}

void Copier::watch_kernel() {
  if (!kernel_running()) {
    return;
  }
  cuda::CUresult rc = make_current(kernel_ordinal_);
  if (rc == cuda::kSuccess) {
    rc = driver_.stream_query(kernel_stream_);
  }
  if (rc != cuda::kErrorNotReady) {
    // The kernel ends only when stopped: ended on its own, it failed (a fault, a reset GPU).
    VROCE_LOG(Error, "vroce-gpu-copier: the copy kernel on device %d ended with %s",
              kernel_ordinal_, driver_.error_text(rc).c_str());
    channel_.kernel_failed.store(rc == cuda::kSuccess ? cuda::kErrorInvalidValue : rc,
                                 std::memory_order_seq_cst);
    channel_.kernel_running.store(0, std::memory_order_seq_cst);
    kernel_state_ = KernelState::Off;
    return;
  }
  const uint32_t sequence = request_sequence(channel_.kernel);
  const uint64_t now = copier::monotonic_ns();
  if (sequence != watched_sequence_) {
    watched_sequence_ = sequence;
    idle_since_ns_ = now;
  } else if (now - idle_since_ns_ >= uint64_t{channel_.kernel_idle_ms} * 1'000'000) {
    stop_kernel(false);
  }
}

bool parent_alive(int socket) {
  pollfd check{socket, 0, 0};  // POLLHUP: the application's end is closed
  return ::poll(&check, 1, 0) == 0;
}

void say_hello(int socket, int status, const std::string& detail) {
  copier::Hello hello;
  hello.status = status;
  hello.pid = static_cast<uint32_t>(::getpid());
  std::snprintf(hello.detail, sizeof hello.detail, "%s", detail.c_str());
  ::send(socket, &hello, sizeof hello, MSG_NOSIGNAL);
}

}  // namespace

int main(int argc, char**) {
  const int socket = copier::kSocketFd;
  struct stat shared {};
  if (argc != 2 || ::fstat(copier::kSharedMemoryFd, &shared) != 0 ||
      shared.st_size < static_cast<off_t>(sizeof(copier::Channel))) {
    std::fprintf(stderr,
                 "vroce-gpu-copier: started by vroce (libibverbs.so.1) with its channel on "
                 "descriptors 3 and 4; not meant to be run by hand\n");
    return 2;
  }
  void* mapped = ::mmap(nullptr, sizeof(copier::Channel), PROT_READ | PROT_WRITE, MAP_SHARED,
                        copier::kSharedMemoryFd, 0);
  ::close(copier::kSharedMemoryFd);
  if (mapped == MAP_FAILED) {
    say_hello(socket, -errno, std::string("cannot map the channel: ") + std::strerror(errno));
    return 1;
  }
  auto& channel = *static_cast<copier::Channel*>(mapped);
  if (channel.magic != copier::kMagic || channel.version != copier::kVersion) {
    say_hello(socket, -EPROTO,
              "vroce-gpu-copier is from another build of vroce (channel version mismatch)");
    return 1;
  }
  const CudaDriver* driver = cuda_driver();
  if (driver == nullptr) {
    say_hello(socket, -ENODEV, cuda_unavailable_reason());
    return 1;
  }
  Copier copier(*driver, channel);
  // Read before saying ready: the first request may be posted the moment the client hears it.
  uint32_t seen = channel.posted.load(std::memory_order_acquire);
  say_hello(socket, 0, "");

  const uint64_t spin_ns = uint64_t{channel.helper_spin_us} * 1000;
  for (;;) {
    uint32_t now = copier::wait_for_change(
        channel.posted, channel.helper_asleep, seen, spin_ns,
        copier.kernel_running() ? kKernelWatchNs : kParentCheckNs, [&copier] {
          copier.watch_kernel();
          return parent_alive(copier::kSocketFd);
        });
    if (now == seen) {
      copier.end();
      return 0;  // the application is gone
    }
    seen = now;
    bool start_kernel = false;
    if (channel.op == copier::Op::Control) {
      copier.serve_control(socket);
      channel.status = 0;
    } else {
      start_kernel = channel.want_kernel != 0;  // read before the answer frees the channel
      channel.status = copier.copy();
      start_kernel = start_kernel && channel.status == cuda::kSuccess;
    }
    copier::advance_and_wake(channel.finished, channel.client_asleep);
    if (start_kernel) {
      copier.start_kernel();  // after the answer: the client need not wait for the launch
    }
  }
}
