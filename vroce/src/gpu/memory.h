// Where a memory region lives and how vroce moves bytes in and out of it. Host memory is plain
// memcpy; CUDA device memory goes through the CUDA driver API, loaded with dlopen at run time
// (libcuda.so.1), so vroce has no build-time CUDA dependency and works in processes without CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vroce::gpu {

enum class MemoryKind { Host, Cuda };

// Classifies [addr, addr+length): Cuda when the CUDA driver is loadable and the range is device
// memory of one allocation; Host otherwise. Never fails; cheap after the first call.
MemoryKind classify(const void* addr, size_t length) noexcept;

// True when addr is a CUDA device pointer whose allocation covers [addr, addr+length).
bool is_device_range(uint64_t addr, size_t length) noexcept;

// True when addr lies in CUDA device memory at all. With is_device_range() it tells a range that
// starts in a device allocation but runs past its end (classify() says Host for it, and the CPU
// cannot touch it either): registering such a range must fail (EFAULT), as it does on a NIC.
bool is_device_pointer(uint64_t addr) noexcept;

// Called for each registration of CUDA memory and its deregistration: where copies are made by
// the helper process (VROCE_GPU_COPIES=helper, gpu/copy_helper.h), the allocation is shared with
// it. 0 or an errno value (logged with the cause).
int attach_device_range(uint64_t addr, size_t length) noexcept;
void detach_device_range(uint64_t addr, size_t length) noexcept;

// Copies between a region of the given kind and host memory. Return 0 or an errno value.
// Safe to call from any thread (vroce's progress thread makes the owning context current).
int copy_to_region(MemoryKind kind, uint64_t region_addr, const void* src, size_t length) noexcept;
int copy_from_region(MemoryKind kind, uint64_t region_addr, void* dst, size_t length) noexcept;

}  // namespace vroce::gpu
