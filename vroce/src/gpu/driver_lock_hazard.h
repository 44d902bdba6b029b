// The one way vroce's emulated GPUDirect can hang an application when its copies are made inside
// the application's process (VROCE_GPU_COPIES=in-process), and how vroce makes it loud. The
// default, copies made by a helper process (gpu/copy_helper.h), ends the deadlock.
//
// A NIC writes GPU memory by PCIe peer-to-peer DMA; no CUDA call is involved. vroce has no such
// path (the CPU cannot map a dma-buf of a discrete GPU's memory), so it moves payload with CUDA
// driver copies made from inside the application's process, and those calls need the driver's
// process-wide lock. Two things an application does hold that lock while waiting for the GPU:
//  - loading a kernel lazily (CUDA_MODULE_LOADING=LAZY, PyTorch's default) synchronises the
//    context;
//  - submitting work while the launch queue is full (the host far ahead of the GPU) waits for
//    room in it.
// When the GPU is running an NCCL kernel that waits for the data vroce is copying, nothing can
// move: the kernel waits for vroce, vroce for the lock, the lock's holder for the kernel. Both
// were caught on H200s with PyTorch (docs/vroce.md has the stacks). In-process, vroce cannot break
// the cycle; it says what is happening and how the application avoids it.
#pragma once

#include <cstdint>

namespace vroce::gpu {

// At the first copy to or from device memory: a warning, once per process, when
// CUDA_MODULE_LOADING is not EAGER.
void warn_if_lazy_module_loading() noexcept;

// Marks a sequence of CUDA driver calls on this thread for as long as it lives. A watchdog thread
// (started with the first watch) reports, once per watch, one that has lasted longer than
// VROCE_GPU_STALL_WARN_MS, naming the deadlock above and its remedies, and says when it ends.
class DriverCallWatch {
 public:
  explicit DriverCallWatch(const char* what) noexcept;
  ~DriverCallWatch();
  DriverCallWatch(const DriverCallWatch&) = delete;
  DriverCallWatch& operator=(const DriverCallWatch&) = delete;

 private:
  uint64_t ticket_ = 0;  // 0: not watched (the watchdog could not be set up)
};

}  // namespace vroce::gpu
