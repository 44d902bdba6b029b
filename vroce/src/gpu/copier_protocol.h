// What vroce and its GPU copy helper (vroce-gpu-copier, vroce/copier/) share: one page-aligned
// block of shared memory (a memfd both map) and a SOCK_SEQPACKET socket for the rare control
// messages. Both sides are built from this one tree, so the layout needs no negotiation beyond
// the magic and version the helper checks at start.
//
// Why a second process at all: every CUDA driver call of a process can wait behind a lock that
// an application thread holds while it waits for the GPU (gpu/driver_lock_hazard.h), and the GPU
// may be waiting for the very bytes vroce is copying. A process of its own has its own driver
// state; measured on an H200, its copies got past both locks that hung in-process copies
// (docs/benchmarks-log.md, "Where the driver lock is held").
//
// One copy is in flight at a time (the client holds a mutex from posting to reading the result).
// Hand-off: the client fills the request fields and the staging bytes, then bumps `posted`; the
// helper copies and bumps `finished`. Each side spins briefly on the other's word and then sleeps
// on it with a futex; a side that sleeps says so first in its `*_asleep` word, so the other makes
// the futex-wake system call only when someone sleeps (both use sequentially consistent order, so
// at least one of "I sleep" and "I posted" is seen by the other).
//
// Small copies may skip the helper's CPU thread: where its copy kernel runs (gpu/
// copy_kernel_mailbox.h), the client writes the request into the kernel's mailbox and polls
// for the answer. `kernel_gate` decides who may touch the mailbox: the client takes it for one
// copy, the helper takes it to stop an idle kernel, and a client that finds it taken, or no
// kernel running, makes its copy the usual way and asks for the kernel (`want_kernel`).
#pragma once

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "config/config.h"
#include "gpu/copy_kernel_mailbox.h"
#include "gpu/cuda_api.h"
#include "util/shared_futex.h"

namespace vroce::gpu::copier {

inline constexpr uint32_t kMagic = 0x76676331;  // "vgc1"
inline constexpr uint32_t kVersion = 2;
// Bytes one request moves at most; larger copies are made in pieces of this size.
inline constexpr size_t kStagingBytes = size_t{1} << 20;
// The file descriptors the helper finds its channel on (the client dup2()s them there).
inline constexpr int kSocketFd = 3;
inline constexpr int kSharedMemoryFd = 4;

enum class Op : uint32_t {
  ToDevice = 1,    // staging -> region + offset
  FromDevice = 2,  // region + offset -> staging
  Control = 3,     // a control message waits on the socket
};

struct alignas(4096) Channel {
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  // How long the helper spins after a request before it sleeps (0: it sleeps at once).
  uint32_t helper_spin_us = 0;
  std::atomic<uint32_t> posted{0};    // futex word: bumped by the client per request
  std::atomic<uint32_t> finished{0};  // futex word: bumped by the helper per answer
  std::atomic<uint32_t> helper_asleep{0};
  std::atomic<uint32_t> client_asleep{0};
  // The request.
  Op op = Op::Control;
  uint32_t region = 0;  // an id the helper gave at Open
  uint64_t offset = 0;  // into the region
  uint64_t length = 0;  // <= kStagingBytes
  // The answer: a CUresult (kSuccess, or what the driver returned).
  int32_t status = 0;
  // The copy kernel: whether it may run (VROCE_GPU_COPY_KERNEL), set by the client at start.
  GpuCopyKernel kernel_mode = GpuCopyKernel::Off;
  uint32_t kernel_idle_ms = 0;  // VROCE_GPU_COPY_KERNEL_IDLE_MS, set by the client at start
  // Set by the client with a copy request: start the kernel after this copy.
  uint32_t want_kernel = 0;
  std::atomic<uint32_t> kernel_gate{0};     // 0 free, 1 the client posts, 2 the helper stops it
  std::atomic<uint32_t> kernel_running{0};  // set by the helper while its kernel runs
  std::atomic<int32_t> kernel_failed{0};    // the CUresult the kernel ended with, if it failed
  int32_t kernel_device = -1;               // the device the kernel runs on
  KernelMailbox kernel;
  alignas(4096) uint8_t staging[kStagingBytes];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<int32_t>::is_always_lock_free,
              "the futex and gate words are shared between processes");

// Control messages, one datagram each way per request.
enum class ControlOp : uint32_t {
  Open = 1,   // open an allocation of the application's process by its CUDA IPC handle
  Close = 2,  // forget a region opened before
};

struct ControlRequest {
  ControlOp op = ControlOp::Open;
  int32_t device_ordinal = 0;  // Open: the device the allocation is on
  uint64_t size = 0;           // Open: the allocation's size
  uint32_t region = 0;         // Close
  cuda::CUipcMemHandle handle{};
};

struct ControlReply {
  int32_t status = 0;  // a CUresult; or -errno for a failure outside the driver
  uint32_t region = 0;
  uint64_t device_address = 0;  // Open: where the allocation lies in the helper's context
  char detail[240] = {};        // what failed, for the client's log line
};

// The first datagram the helper sends: whether it is ready to copy, and if not, why.
struct Hello {
  int32_t status = 0;  // 0: ready
  uint32_t pid = 0;
  char detail[240] = {};
};

// CLOCK_MONOTONIC in nanoseconds: the spins and the idle watch of both sides.
inline uint64_t monotonic_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(t.tv_nsec);
}

// Waits until `word` differs from `seen` and returns its new value. Spins for spin_ns first,
// then sleeps on the futex (announced in `asleep`) in slices of slice_ns; after each slice that
// ends with the word unchanged, keep_waiting() decides whether to go on (false: the other side is
// gone, and `seen` is returned).
template <typename KeepWaiting>
uint32_t wait_for_change(std::atomic<uint32_t>& word, std::atomic<uint32_t>& asleep, uint32_t seen,
                         uint64_t spin_ns, uint64_t slice_ns, KeepWaiting keep_waiting) {
  uint32_t now = word.load(std::memory_order_acquire);
  if (now != seen) {
    return now;
  }
  if (spin_ns > 0) {
    const uint64_t start = monotonic_ns();
    for (;;) {
      for (int i = 0; i < 64; ++i) {
        __builtin_ia32_pause();
        if ((now = word.load(std::memory_order_acquire)) != seen) {
          return now;
        }
      }
      if (monotonic_ns() - start >= spin_ns) {
        break;
      }
    }
  }
  asleep.store(1, std::memory_order_seq_cst);
  while ((now = word.load(std::memory_order_seq_cst)) == seen) {
    shared_futex_wait(&word, seen, slice_ns);
    if (word.load(std::memory_order_seq_cst) == seen && !keep_waiting()) {
      break;
    }
  }
  asleep.store(0, std::memory_order_relaxed);
  return now;
}

// Publishes one step of `word` and wakes the other side if it sleeps on it.
inline void advance_and_wake(std::atomic<uint32_t>& word, std::atomic<uint32_t>& asleep) {
  word.fetch_add(1, std::memory_order_seq_cst);
  if (asleep.load(std::memory_order_seq_cst) != 0) {
    shared_futex_wake(&word);
  }
}

}  // namespace vroce::gpu::copier
