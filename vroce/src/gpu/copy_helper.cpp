// The application's side of the GPU copy helper; see gpu/copy_helper.h and gpu/copier_protocol.h.
#include "gpu/copy_helper.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "config/config.h"
#include "gpu/copier_protocol.h"
#include "gpu/cuda_driver.h"
#include "stats/stats.h"
#include "util/log.h"

extern char** environ;

namespace vroce::gpu::helper {
namespace {

using copier::Channel;
using copier::Chunk;
using copier::load_chunk;
using copier::monotonic_ns;
using copier::store_chunk;

// How long the client sleeps between checks that the helper is still there.
constexpr uint64_t kLivenessSliceNs = 100'000'000;
// How long the helper may take to load the driver and say it is ready (cuInit on a machine with
// several GPUs takes seconds).
constexpr int kHelloTimeoutMs = 120'000;

struct Attached {
  uint64_t size = 0;
  uint64_t device_address = 0;  // where the helper's context sees the allocation
  int ordinal = -1;             // its device
  uint32_t region = 0;          // the helper's id
  uint32_t users = 0;           // attach() calls not yet undone
};

// How long a copy waits for the kernel's answer by spinning before it sleeps between looks (the
// kernel answers within microseconds unless its GPU is busy with other contexts' work).
constexpr uint64_t kKernelSpinNs = 200'000;
constexpr timespec kKernelNap{0, 20'000};

// The copier beside the library (or executable) this code is linked into.
std::string copier_path() {
  if (const char* configured = std::getenv("VROCE_GPU_COPIER");
      configured != nullptr && *configured != '\0') {
    return configured;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&copier_path), &info) == 0 || info.dli_fname == nullptr) {
    return "vroce-gpu-copier";
  }
  std::string self = info.dli_fname;
  auto slash = self.rfind('/');
  return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) +
         "/vroce-gpu-copier";
}

class Client {
 public:
  int attach(uint64_t addr, const DeviceAllocation& allocation);
  void detach(uint64_t addr, size_t length);
  int copy(copier::Op op, uint64_t addr, uint8_t* host, size_t length);

 private:
  // Hands one copy to the helper's kernel if it runs on the region's device. False: it does not,
  // or the helper is stopping it; the copy then goes through the helper's thread.
  bool kernel_copy(copier::Op op, const Attached& region, uint64_t offset, uint8_t* host,
                   size_t length, int* rc);
  // Waits for the kernel's answer to request `sequence`; false when the kernel or the helper
  // failed first.
  bool wait_for_kernel(uint32_t sequence, uint32_t chunks);
  int start();  // needs mutex_
  int fail_helper(const std::string& why);
  bool helper_alive();
  // One request and its answer (the fields of channel_ are filled). False: the helper is gone.
  bool round_trip();
  int control(const copier::ControlRequest& request, copier::ControlReply* reply);
  std::map<uint64_t, Attached>::iterator find(uint64_t addr, size_t length);

  std::mutex mutex_;  // one request at a time; guards everything below
  pid_t owner_ = 0;   // the process that started the helper (a forked child must not use it)
  pid_t helper_ = -1;
  int socket_ = -1;
  Channel* channel_ = nullptr;
  uint32_t finished_seen_ = 0;
  uint64_t spin_ns_ = 0;
  size_t kernel_max_ = 0;         // copies up to this size may go to the kernel (0: none)
  uint32_t kernel_sequence_ = 0;  // the last request posted to the kernel
  std::string failure_;           // set once the helper cannot be used; every later call fails
  std::map<uint64_t, Attached> regions_;  // allocation start -> what the helper opened
};

Client& client() {
  // Never destroyed: a copy may race process exit.
  static auto* instance = new Client;
  return *instance;
}

int Client::fail_helper(const std::string& why) {
  if (failure_.empty()) {
    failure_ = why;
    VROCE_LOG(Error,
              "GPU copies (VROCE_GPU_COPIES=helper): %s; every copy to or from CUDA memory now "
              "fails. Set VROCE_GPU_COPIES=in-process to copy inside the application's process "
              "(see docs/vroce.md, \"GPU memory\")",
              why.c_str());
  }
  return EIO;
}

int Client::start() {
  if (channel_ != nullptr) {
    if (owner_ == ::getpid()) {
      return failure_.empty() ? 0 : EIO;
    }
    // A forked child shares the parent's channel; it must not post into it.
    return fail_helper("this process was forked from the one that started the copy helper");
  }
  if (!failure_.empty()) {
    return EIO;
  }
  const std::string path = copier_path();
  if (::access(path.c_str(), X_OK) != 0) {
    return fail_helper("the copy helper " + path + " cannot be run (" + std::strerror(errno) +
                       "); it is installed beside libibverbs.so.1, or VROCE_GPU_COPIER names it");
  }
  int memfd = ::memfd_create("vroce-gpu-copies", MFD_CLOEXEC);
  if (memfd < 0 || ::ftruncate(memfd, sizeof(Channel)) != 0) {
    int err = errno;
    if (memfd >= 0) {
      ::close(memfd);
    }
    return fail_helper(std::string("no shared memory for the copy channel: ") + std::strerror(err));
  }
  void* shared = ::mmap(nullptr, sizeof(Channel), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  int sockets[2] = {-1, -1};
  if (shared == MAP_FAILED ||
      ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0) {
    int err = errno;
    if (shared != MAP_FAILED) {
      ::munmap(shared, sizeof(Channel));
    }
    ::close(memfd);
    return fail_helper(std::string("cannot set up the copy channel: ") + std::strerror(err));
  }
  auto* channel = new (shared) Channel;
  channel->helper_spin_us = spin_after_activity_us();  // both sides spin alike
  spin_ns_ = uint64_t{channel->helper_spin_us} * 1000;
  channel->kernel_mode = config().gpu_copy_kernel;
  channel->kernel_idle_ms = config().gpu_copy_kernel_idle_ms;
  kernel_max_ = config().gpu_copy_kernel == GpuCopyKernel::Off ? 0 : config().gpu_copy_kernel_max;

  // The child's descriptors 3 and 4, from copies above them so that dup2 never meets itself
  // (which would leave close-on-exec set).
  int child_socket = ::fcntl(sockets[1], F_DUPFD_CLOEXEC, 10);
  int child_memfd = ::fcntl(memfd, F_DUPFD_CLOEXEC, 10);
  ::close(sockets[1]);
  ::close(memfd);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_socket, copier::kSocketFd);
  posix_spawn_file_actions_adddup2(&actions, child_memfd, copier::kSharedMemoryFd);
  // The helper starts with no blocked signals and the default handlers for the ones that end
  // it, whatever the application's threads have set.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigset_t defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int signal : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) {
    sigaddset(&defaults, signal);
  }
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string parent = std::to_string(::getpid());
  char* argv[] = {const_cast<char*>(path.c_str()), const_cast<char*>(parent.c_str()), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, path.c_str(), &actions, &attributes, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(child_socket);
  ::close(child_memfd);
  if (rc != 0) {
    ::close(sockets[0]);
    ::munmap(shared, sizeof(Channel));
    return fail_helper("cannot start the copy helper " + path + ": " + std::strerror(rc));
  }
  helper_ = pid;
  owner_ = ::getpid();
  socket_ = sockets[0];
  channel_ = channel;

  copier::Hello hello;
  pollfd ready{socket_, POLLIN, 0};
  int polled = ::poll(&ready, 1, kHelloTimeoutMs);
  ssize_t got = polled == 1 ? ::recv(socket_, &hello, sizeof hello, 0) : -1;
  if (got != static_cast<ssize_t>(sizeof hello)) {
    return fail_helper("the copy helper " + path + " (pid " + std::to_string(pid) +
                       ") did not report ready" + (polled == 0 ? " within 120 s" : ""));
  }
  if (hello.status != 0) {
    hello.detail[sizeof hello.detail - 1] = '\0';
    return fail_helper("the copy helper cannot copy: " + std::string(hello.detail));
  }
  VROCE_LOG(Info, "GPU copies are made by the helper process %d (%s)", static_cast<int>(pid),
            path.c_str());
  return 0;
}

bool Client::helper_alive() {
  pollfd check{socket_, 0, 0};  // POLLHUP and POLLERR are always reported
  if (::poll(&check, 1, 0) == 0) {
    return true;
  }
  int status = 0;
  std::string how = "has exited";
  if (::waitpid(helper_, &status, WNOHANG) == helper_) {
    how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                              : "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  fail_helper("the copy helper (pid " + std::to_string(helper_) + ") " + how);
  return false;
}

bool Client::round_trip() {
  copier::advance_and_wake(channel_->posted, channel_->helper_asleep);
  // A helper that lives but does not answer is inside the driver: said once per request after
  // VROCE_GPU_STALL_WARN_MS, as the in-process watchdog does for its own copies.
  const auto started = std::chrono::steady_clock::now();
  const auto patience = std::chrono::milliseconds(config().gpu_stall_warn_ms);
  bool reported = false;
  auto keep_waiting = [&] {
    if (!helper_alive()) {
      return false;
    }
    auto waited = std::chrono::steady_clock::now() - started;
    if (!reported && waited > patience) {
      reported = true;
      VROCE_LOG(Error,
                "a request to vroce's copy helper (pid %d) has been unanswered for %.1f s: its "
                "CUDA driver call is not completing (a GPU that does not run the helper's "
                "context, or a hung GPU); the peer will see its transport retries exhausted",
                static_cast<int>(helper_), std::chrono::duration<double>(waited).count());
    }
    return true;
  };
  uint32_t now = copier::wait_for_change(channel_->finished, channel_->client_asleep,
                                         finished_seen_, spin_ns_, kLivenessSliceNs, keep_waiting);
  if (reported && now != finished_seen_) {
    VROCE_LOG(Warn, "the request to vroce's copy helper reported unanswered has completed");
  }
  if (now == finished_seen_) {
    return false;
  }
  finished_seen_ = now;
  return true;
}

int Client::control(const copier::ControlRequest& request, copier::ControlReply* reply) {
  if (::send(socket_, &request, sizeof request, MSG_NOSIGNAL) !=
      static_cast<ssize_t>(sizeof request)) {
    helper_alive();
    return fail_helper(std::string("cannot reach the copy helper: ") + std::strerror(errno));
  }
  channel_->op = copier::Op::Control;
  if (!round_trip()) {
    return EIO;
  }
  if (::recv(socket_, reply, sizeof *reply, MSG_DONTWAIT) != static_cast<ssize_t>(sizeof *reply)) {
    return fail_helper("the copy helper answered a control request with nothing");
  }
  reply->detail[sizeof reply->detail - 1] = '\0';
  return 0;
}

std::map<uint64_t, Attached>::iterator Client::find(uint64_t addr, size_t length) {
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) {
    return regions_.end();
  }
  --it;
  if (addr - it->first > it->second.size || length > it->second.size - (addr - it->first)) {
    return regions_.end();
  }
  return it;
}

int Client::attach(uint64_t addr, const DeviceAllocation& allocation) {
  const CudaDriver* driver = cuda_driver();
  if (driver == nullptr) {
    return ENODEV;
  }
  // The helper opens whole allocations.
  const cuda::CUdeviceptr base = allocation.base;
  const size_t size = allocation.size;
  std::lock_guard lock(mutex_);
  if (int rc = start(); rc != 0) {
    return rc;
  }
  if (auto it = regions_.find(base); it != regions_.end() && it->second.size == size) {
    ++it->second.users;
    return 0;
  }
  copier::ControlRequest request;
  request.op = copier::ControlOp::Open;
  request.device_ordinal = allocation.device_ordinal;
  request.size = size;
  cuda::CUresult exported = driver->ipc_get_mem_handle(&request.handle, base);
  if (exported != cuda::kSuccess) {
    VROCE_LOG(Error,
              "ibv_reg_mr: CUDA memory at 0x%llx (allocation 0x%llx, %zu bytes) cannot be shared "
              "with vroce's copy helper: cuIpcGetMemHandle failed with %s. Allocations made with "
              "cuMemCreate (NCCL's own buffers unless NCCL_CUMEM_ENABLE=0) have no CUDA IPC "
              "handle; set NCCL_CUMEM_ENABLE=0, or VROCE_GPU_COPIES=in-process",
              static_cast<unsigned long long>(addr), static_cast<unsigned long long>(base), size,
              driver->error_text(exported).c_str());
    return EFAULT;
  }
  copier::ControlReply reply;
  if (int rc = control(request, &reply); rc != 0) {
    return rc;
  }
  if (reply.status != 0) {
    VROCE_LOG(Error, "ibv_reg_mr: vroce's copy helper cannot open CUDA memory at 0x%llx: %s",
              static_cast<unsigned long long>(base), reply.detail);
    return EFAULT;
  }
  try {
    regions_[base] =
        Attached{size, reply.device_address, allocation.device_ordinal, reply.region, 1};
  } catch (...) {
    return ENOMEM;  // the helper keeps the region open; harmless
  }
  return 0;
}

void Client::detach(uint64_t addr, size_t length) {
  std::lock_guard lock(mutex_);
  auto it = find(addr, length);
  if (it == regions_.end() || --it->second.users > 0) {
    return;
  }
  copier::ControlRequest request;
  request.op = copier::ControlOp::Close;
  request.region = it->second.region;
  regions_.erase(it);
  copier::ControlReply reply;
  if (failure_.empty()) {
    control(request, &reply);
  }
}

bool Client::wait_for_kernel(uint32_t sequence, uint32_t chunks) {
  const copier::MailboxLine& reply = channel_->kernel.reply;
  const uint64_t started = monotonic_ns();
  uint64_t next_check = started + kKernelSpinNs;
  bool reported = false;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      bool answered = true;
      for (uint32_t c = 0; c < chunks && answered; ++c) {
        answered = load_chunk(reply, c).words[0] == sequence;
      }
      if (answered) {
        if (reported) {
          VROCE_LOG(Warn, "the copy reported unanswered by vroce's copy kernel has completed");
        }
        return true;
      }
      __builtin_ia32_pause();
    }
    const uint64_t now = monotonic_ns();
    if (now < next_check) {
      continue;
    }
    if (int32_t failed = channel_->kernel_failed.load(std::memory_order_seq_cst); failed != 0) {
      fail_helper("the copy kernel of the helper (pid " + std::to_string(helper_) +
                  ") ended with CUresult " + std::to_string(failed) +
                  " (VROCE_GPU_COPY_KERNEL=off keeps the helper's copies off the kernel)");
      return false;
    }
    if (!helper_alive()) {
      return false;
    }
    const uint64_t waited = now - started;
    if (!reported && waited > uint64_t{config().gpu_stall_warn_ms} * 1'000'000) {
      reported = true;
      VROCE_LOG(Error,
                "a copy handed to vroce's copy kernel (helper pid %d) has been unanswered for "
                "%.1f s: the GPU is not running the kernel (a hung GPU, or one busy with other "
                "contexts' work: VROCE_GPU_COPY_KERNEL=auto uses the kernel only under MPS)",
                static_cast<int>(helper_), static_cast<double>(waited) / 1e9);
    }
    ::nanosleep(&kKernelNap, nullptr);
    next_check = monotonic_ns() + kKernelSpinNs / 4;
  }
}

bool Client::kernel_copy(copier::Op op, const Attached& region, uint64_t offset, uint8_t* host,
                         size_t length, int* rc) {
  uint32_t free_gate = 0;
  if (!channel_->kernel_gate.compare_exchange_strong(free_gate, 1, std::memory_order_seq_cst)) {
    return false;
  }
  if (channel_->kernel_running.load(std::memory_order_seq_cst) == 0 ||
      channel_->kernel_device != region.ordinal) {
    channel_->kernel_gate.store(0, std::memory_order_seq_cst);
    return false;
  }
  const uint32_t sequence = ++kernel_sequence_;
  const uint32_t kop =
      op == copier::Op::ToDevice ? copier::kKernelToDevice : copier::kKernelFromDevice;
  const auto bytes = static_cast<uint32_t>(length);
  const bool inline_data = bytes <= copier::kInlineBytes;
  if (op == copier::Op::ToDevice && !inline_data) {
    std::memcpy(channel_->staging, host, length);
  }
  const uint64_t address = region.device_address + offset;
  Chunk line[copier::kLineChunks] = {};
  for (Chunk& chunk : line) {
    chunk.words[0] = sequence;
  }
  line[0].words[1] = kop;
  line[0].words[2] = bytes;
  line[1].words[1] = static_cast<uint32_t>(address);
  line[1].words[2] = static_cast<uint32_t>(address >> 32);
  if (op == copier::Op::ToDevice && inline_data) {
    for (uint32_t k = 0; k < bytes; k += copier::kDataBytesPerChunk) {
      std::memcpy(&line[copier::kFirstDataChunk + k / copier::kDataBytesPerChunk].words[1],
                  host + k, std::min(copier::kDataBytesPerChunk, bytes - k));
    }
  }
  asm volatile("" ::: "memory");  // the staging bytes before the request (x86 keeps the order)
  for (uint32_t c = 0; c < copier::kLineChunks; ++c) {
    store_chunk(channel_->kernel.request, c, line[c]);
  }
  const bool answered = wait_for_kernel(sequence, copier::reply_chunks(kop, bytes));
  if (answered && op == copier::Op::FromDevice) {
    if (inline_data) {
      for (uint32_t k = 0; k < bytes; k += copier::kDataBytesPerChunk) {
        const Chunk chunk = load_chunk(channel_->kernel.reply,
                                       copier::kFirstDataChunk + k / copier::kDataBytesPerChunk);
        std::memcpy(host + k, &chunk.words[1], std::min(copier::kDataBytesPerChunk, bytes - k));
      }
    } else {
      std::memcpy(host, channel_->staging, length);
    }
  }
  channel_->kernel_gate.store(0, std::memory_order_seq_cst);
  if (answered) {
    stats().cuda_copies_by_kernel.add();
  }
  *rc = answered ? 0 : EIO;
  return true;
}

int Client::copy(copier::Op op, uint64_t addr, uint8_t* host, size_t length) {
  std::lock_guard lock(mutex_);
  if (channel_ == nullptr || !failure_.empty() || owner_ != ::getpid()) {
    return EIO;
  }
  auto it = find(addr, length);
  if (it == regions_.end()) {
    VROCE_LOG(Error, "GPU copy helper: 0x%llx (+%zu) is in no registered CUDA allocation",
              static_cast<unsigned long long>(addr), length);
    return EFAULT;
  }
  const bool small = kernel_max_ > 0 && length <= kernel_max_;
  if (small) {
    int rc = 0;
    if (kernel_copy(op, it->second, addr - it->first, host, length, &rc)) {
      return rc;
    }
  }
  channel_->want_kernel = small ? 1 : 0;  // the helper starts the kernel after this copy
  for (size_t done = 0; done < length;) {
    const size_t piece = std::min(length - done, copier::kStagingBytes);
    channel_->op = op;
    channel_->region = it->second.region;
    channel_->offset = addr + done - it->first;
    channel_->length = piece;
    if (op == copier::Op::ToDevice) {
      std::memcpy(channel_->staging, host + done, piece);
    }
    if (!round_trip()) {
      return EIO;
    }
    if (channel_->status != cuda::kSuccess) {
      static std::atomic<bool> logged{false};
      if (!logged.exchange(true)) {
        VROCE_LOG(Error, "GPU copy helper: a copy %s device memory failed with CUresult %d",
                  op == copier::Op::ToDevice ? "into" : "out of", channel_->status);
      }
      return channel_->status == cuda::kErrorInvalidValue ? EFAULT : EIO;
    }
    if (op == copier::Op::FromDevice) {
      std::memcpy(host + done, channel_->staging, piece);
    }
    done += piece;
  }
  return 0;
}

}  // namespace

int attach(uint64_t addr, const DeviceAllocation& allocation) noexcept {
  try {
    return client().attach(addr, allocation);
  } catch (...) {
    return ENOMEM;
  }
}

void detach(uint64_t addr, size_t length) noexcept {
  try {
    client().detach(addr, length);
  } catch (...) {  // nothing to undo: the helper keeps the region until it exits
  }
}

int copy_to_device(uint64_t addr, const void* src, size_t length) noexcept {
  return client().copy(copier::Op::ToDevice, addr,
                       const_cast<uint8_t*>(static_cast<const uint8_t*>(src)), length);
}

int copy_from_device(uint64_t addr, void* dst, size_t length) noexcept {
  return client().copy(copier::Op::FromDevice, addr, static_cast<uint8_t*>(dst), length);
}

}  // namespace vroce::gpu::helper
