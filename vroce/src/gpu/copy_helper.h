// vroce's GPU copies made by a helper process (VROCE_GPU_COPIES=helper): the application's
// process side. Why a second process, and the channel between the two, are in
// gpu/copier_protocol.h; the helper is vroce/copier/.
//
// The helper is started at the first registration of CUDA memory, from the executable
// VROCE_GPU_COPIER names or else vroce-gpu-copier beside the library that holds this code. Each
// registered allocation is exported with cuIpcGetMemHandle (a driver call in the application's
// process, made at registration, never on the data path) and opened by the helper once, however
// many regions cover it. After that a copy is a hand-off through shared memory: no CUDA call in
// the application's process, so no application thread can block it. A helper that dies fails
// every later copy with EIO and one error line naming it; the QPs involved move to the error
// state, as a DMA failure does on a NIC.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vroce::gpu::helper {

// A CUDA allocation, as cuPointerGetAttributes reports the one holding a registered range.
struct DeviceAllocation {
  uint64_t base = 0;
  size_t size = 0;
  int device_ordinal = -1;
};

// Makes `allocation` (which holds the registered range starting at addr) reachable by the helper,
// starting the helper at first use. 0 or an errno value (logged with the cause and the fix).
int attach(uint64_t addr, const DeviceAllocation& allocation) noexcept;

// Undoes one attach() of the same range.
void detach(uint64_t addr, size_t length) noexcept;

// Copies through the helper; the range must lie in an attached allocation. 0 or an errno value.
int copy_to_device(uint64_t addr, const void* src, size_t length) noexcept;
int copy_from_device(uint64_t addr, void* dst, size_t length) noexcept;

}  // namespace vroce::gpu::helper
