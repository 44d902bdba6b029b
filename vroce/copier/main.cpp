// vroce-gpu-copier: the process that makes vroce's copies to and from CUDA memory when
// VROCE_GPU_COPIES=helper (the default). vroce starts one per application process at its first
// registration of CUDA memory (gpu/copy_helper.cpp) and hands it, as descriptors 3 and 4, the
// control socket and the shared channel (gpu/copier_protocol.h). It opens each registered
// allocation through CUDA IPC and copies between it and the channel's staging buffer in a context
// of its own, so none of the application's threads can hold a lock its copies need. It exits when
// the application's end of the socket closes (the application exited). Not meant to be run by
// hand.
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "gpu/copier_protocol.h"
#include "gpu/cuda_driver.h"
#include "util/log.h"

namespace {

using namespace vroce;
using namespace vroce::gpu;

constexpr uint64_t kParentCheckNs = 100'000'000;

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

 private:
  // The device's context (its primary context, retained for the life of the helper) made current
  // on this thread, with a non-blocking stream; the staging buffer is page-locked on first use.
  cuda::CUresult use_device(int ordinal, Device** device, std::string* what);
  copier::ControlReply open(const copier::ControlRequest& request);

  const CudaDriver& driver_;
  copier::Channel& channel_;
  std::map<int, Device> devices_;
  std::map<uint32_t, Region> regions_;
  uint32_t next_region_ = 1;
  int current_ = -1;
  bool staging_registered_ = false;
};

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
      // Portable: page-locked for every context of this process. Without it the copies still
      // work, through the driver's own staging, a little slower.
      rc = driver_.mem_host_register(channel_.staging, copier::kStagingBytes,
                                     cuda::kMemHostRegisterPortable);
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
  regions_[reply.region] = Region{base, request.size, request.device_ordinal};
  return reply;
}

void Copier::serve_control(int socket) {
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
      Device* device = nullptr;
      std::string what;
      if (use_device(it->second.ordinal, &device, &what) == cuda::kSuccess) {
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
  const cuda::CUdeviceptr at = it->second.base + offset;
  cuda::CUresult rc = channel_.op == copier::Op::ToDevice
                          ? driver_.memcpy_htod_async(at, channel_.staging, length, device->stream)
                          : driver_.memcpy_dtoh_async(channel_.staging, at, length, device->stream);
  return rc == cuda::kSuccess ? driver_.stream_synchronize(device->stream) : rc;
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
    uint32_t now =
        copier::wait_for_change(channel.posted, channel.helper_asleep, seen, spin_ns,
                                kParentCheckNs, [] { return parent_alive(copier::kSocketFd); });
    if (now == seen) {
      return 0;  // the application is gone
    }
    seen = now;
    if (channel.op == copier::Op::Control) {
      copier.serve_control(socket);
      channel.status = 0;
    } else {
      channel.status = copier.copy();
    }
    copier::advance_and_wake(channel.finished, channel.client_asleep);
  }
}
