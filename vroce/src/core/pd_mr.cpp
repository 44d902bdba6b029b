// Protection domains and memory registration: access-flag rules as the kernel applies them
// (remote write or atomic needs local write), ranges that must be mapped (or be CUDA memory),
// dma-buf regions (CUDA by device address, otherwise mapped from the fd, which is not kept), and
// keys allocated from the device's table.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "core/context_objects.h"
#include "core/device_state.h"
#include "core/mr.h"
#include "core/pd.h"
#include "core/verbs.h"
#include "device/context.h"
#include "device/device.h"
#include "gpu/memory.h"
#include "stats/stats.h"
#include "util/log.h"

namespace vroce::core {
namespace {

constexpr unsigned kKnownAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                  IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                                  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB;

template <class T>
T* fail(int error) {
  errno = error;
  return nullptr;
}

// Checks the access bits; returns the bits to keep (optional ones dropped) or -1 with errno.
int64_t check_access(unsigned access) {
  // Optional bits (RELAXED_ORDERING and the rest of the range) may be ignored by a device that
  // does not need them; rdma-core drops them the same way.
  access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
  if ((access & ~kKnownAccess) != 0) {
    VROCE_LOG(Warn, "ibv_reg_mr: access 0x%x has unknown bits", access);
    errno = EINVAL;
    return -1;
  }
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 &&
      (access & IBV_ACCESS_LOCAL_WRITE) == 0) {
    VROCE_LOG(Warn,
              "ibv_reg_mr: REMOTE_WRITE or REMOTE_ATOMIC requires LOCAL_WRITE (the NIC writes "
              "the memory); add IBV_ACCESS_LOCAL_WRITE");
    errno = EINVAL;
    return -1;
  }
  if ((access & IBV_ACCESS_ON_DEMAND) != 0) {
    VROCE_LOG(Warn, "ibv_reg_mr: on-demand paging (IBV_ACCESS_ON_DEMAND) is not supported");
    errno = EOPNOTSUPP;
    return -1;
  }
  return access;
}

// True when every page of [addr, addr + length) is mapped: a NIC pins the pages at
// registration and fails with EFAULT when it cannot.
bool mapped(const void* addr, size_t length) {
  auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t start = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(addr) + length;
  constexpr uintptr_t kWindow = uintptr_t{1} << 30;
  std::vector<unsigned char> residency;
  for (uintptr_t at = start; at < end; at += kWindow) {
    uintptr_t len = std::min(kWindow, end - at);
    residency.resize((len + page - 1) / page);
    if (::mincore(reinterpret_cast<void*>(at), len, residency.data()) != 0) {
      return false;
    }
  }
  return true;
}

ibv_mr* register_region(Pd* pd, void* addr, size_t length, uint64_t iova, unsigned access,
                        uint64_t region_addr, gpu::MemoryKind kind, void* mapping,
                        size_t mapping_length) {
  if (kind == gpu::MemoryKind::Cuda) {
    if (int rc = gpu::attach_device_range(region_addr, length); rc != 0) {
      return fail<ibv_mr>(rc);
    }
  }
  auto* mr = new (std::nothrow) Mr;
  if (mr == nullptr) {
    if (kind == gpu::MemoryKind::Cuda) {
      gpu::detach_device_range(region_addr, length);
    }
    return fail<ibv_mr>(ENOMEM);
  }
  mr->ibv.context = &pd->ctx->vctx.context;
  mr->ibv.pd = &pd->ibv;
  mr->ibv.addr = addr;
  mr->ibv.length = length;
  mr->pd = pd;
  mr->iova = iova;
  mr->length = length;
  mr->region_addr = region_addr;
  mr->kind = kind;
  mr->access = access;
  mr->mapping = mapping;
  mr->mapping_length = mapping_length;
  if (!pd->device->keys().insert(mr)) {
    VROCE_LOG(Error, "ibv_reg_mr: the device's key table is full (%u regions)",
              KeyTable::kMaxSlots);
    if (kind == gpu::MemoryKind::Cuda) {
      gpu::detach_device_range(region_addr, length);
    }
    delete mr;
    return fail<ibv_mr>(ENOMEM);
  }
  mr->ibv.handle = mr->slot;
  pd->children.fetch_add(1, std::memory_order_relaxed);
  track_context_object(pd->ctx, ContextObject::Mr, &mr->ibv);
  stats().live_mrs.inc();
  return &mr->ibv;
}

bool check_length(const Pd* pd, size_t length, const char* verb) {
  if (length == 0) {
    VROCE_LOG(Warn, "%s: cannot register 0 bytes", verb);
    errno = EINVAL;
    return false;
  }
  uint64_t max = pd->device->device().device_attr().max_mr_size;
  if (length > max) {
    VROCE_LOG(Warn, "%s: %zu bytes exceed the device's max_mr_size %llu", verb, length,
              static_cast<unsigned long long>(max));
    errno = EINVAL;
    return false;
  }
  return true;
}

}  // namespace

ibv_pd* alloc_pd(ibv_context* context) {
  if (context == nullptr) {
    return fail<ibv_pd>(EINVAL);
  }
  auto* pd = new (std::nothrow) Pd;
  if (pd == nullptr) {
    return fail<ibv_pd>(ENOMEM);
  }
  device::Context* ctx = device::to_context(context);
  static std::atomic<uint32_t> next_handle{1};
  pd->ibv.context = context;
  pd->ibv.handle = next_handle.fetch_add(1, std::memory_order_relaxed);
  pd->ctx = ctx;
  pd->device = &DeviceState::of(*ctx->device);
  track_context_object(ctx, ContextObject::Pd, &pd->ibv);
  stats().live_pds.inc();
  return &pd->ibv;
}

int dealloc_pd(ibv_pd* ibv) {
  if (ibv == nullptr) {
    return EINVAL;
  }
  Pd* pd = to_pd(ibv);
  if (pd->children.load(std::memory_order_acquire) != 0) {
    VROCE_LOG(Warn, "ibv_dealloc_pd: %u MRs/QPs still use this PD; destroy them first",
              pd->children.load(std::memory_order_relaxed));
    return EBUSY;
  }
  untrack_context_object(pd->ctx, ContextObject::Pd, ibv);
  stats().live_pds.dec();
  delete pd;
  return 0;
}

ibv_mr* reg_mr(ibv_pd* ibv, void* addr, size_t length, uint64_t iova, unsigned access) {
  if (ibv == nullptr) {
    return fail<ibv_mr>(EINVAL);
  }
  Pd* pd = to_pd(ibv);
  int64_t kept = check_access(access);
  if (kept < 0 || !check_length(pd, length, "ibv_reg_mr")) {
    return nullptr;
  }
  auto start = reinterpret_cast<uintptr_t>(addr);
  if (start + length < start || iova + length < iova) {
    VROCE_LOG(Warn, "ibv_reg_mr: the range wraps around the address space");
    return fail<ibv_mr>(EINVAL);
  }
  gpu::MemoryKind kind = gpu::classify(addr, length);
  if (kind == gpu::MemoryKind::Host && gpu::is_device_pointer(start)) {
    VROCE_LOG(Warn,
              "ibv_reg_mr: [%p, +%zu) starts in CUDA device memory but runs past its allocation",
              addr, length);
    return fail<ibv_mr>(EFAULT);
  }
  if (kind == gpu::MemoryKind::Host && !mapped(addr, length)) {
    VROCE_LOG(Warn, "ibv_reg_mr: [%p, +%zu) is not mapped memory of this process", addr, length);
    return fail<ibv_mr>(EFAULT);
  }
  return register_region(pd, addr, length, iova, static_cast<unsigned>(kept), start, kind, nullptr,
                         0);
}

ibv_mr* reg_dmabuf_mr(ibv_pd* ibv, uint64_t offset, size_t length, uint64_t iova, int fd,
                      unsigned access) {
  if (ibv == nullptr) {
    return fail<ibv_mr>(EINVAL);
  }
  if (fd < 0) {
    return fail<ibv_mr>(EBADF);  // how NCCL probes for dma-buf support
  }
  Pd* pd = to_pd(ibv);
  int64_t kept = check_access(access);
  if (kept < 0 || !check_length(pd, length, "ibv_reg_dmabuf_mr")) {
    return nullptr;
  }
  if (iova + length < iova) {
    return fail<ibv_mr>(EINVAL);
  }
  // NCCL registers CUDA memory by its dma-buf with the device address as iova: the bytes are
  // reached through the CUDA driver at that address.
  // ibv_mr::addr of a dma-buf region is the offset into the dma-buf, as rdma-core sets it:
  // work requests address the region by its iova, never by addr.
  void* addr_field = reinterpret_cast<void*>(static_cast<uintptr_t>(offset));
  if (gpu::is_device_range(iova, length)) {
    return register_region(pd, addr_field, length, iova, static_cast<unsigned>(kept), iova,
                           gpu::MemoryKind::Cuda, nullptr, 0);
  }
  auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t aligned = offset & ~(page - 1);
  size_t map_length = length + (offset - aligned);
  void* mapping = ::mmap(nullptr, map_length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                         static_cast<off_t>(aligned));
  if (mapping == MAP_FAILED) {
    int err = errno;
    VROCE_LOG(Warn,
              "ibv_reg_dmabuf_mr: fd %d cannot be mapped at offset %llu (+%zu): %s; vroce reaches "
              "dma-buf memory by mapping it, or CUDA memory by its device address as iova",
              fd, static_cast<unsigned long long>(offset), length, std::strerror(err));
    return fail<ibv_mr>(err);
  }
  uint64_t region = reinterpret_cast<uint64_t>(mapping) + (offset - aligned);
  ibv_mr* mr = register_region(pd, addr_field, length, iova, static_cast<unsigned>(kept), region,
                               gpu::MemoryKind::Host, mapping, map_length);
  if (mr == nullptr) {
    int err = errno;
    ::munmap(mapping, map_length);
    errno = err;
  }
  return mr;
}

int dereg_mr(ibv_mr* ibv) {
  if (ibv == nullptr) {
    return EINVAL;
  }
  Mr* mr = to_mr(ibv);
  // Waits until the progress thread no longer copies into or out of the region.
  mr->pd->device->keys().remove(mr);
  if (mr->mapping != nullptr) {
    ::munmap(mr->mapping, mr->mapping_length);
  }
  if (mr->kind == gpu::MemoryKind::Cuda) {
    gpu::detach_device_range(mr->region_addr, mr->length);
  }
  untrack_context_object(mr->pd->ctx, ContextObject::Mr, ibv);
  mr->pd->children.fetch_sub(1, std::memory_order_release);
  stats().live_mrs.dec();
  delete mr;
  return 0;
}

}  // namespace vroce::core
