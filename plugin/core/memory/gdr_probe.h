// The GPUDirect checks themselves (decisions are in gdr.h):
// - peermem: one of <sysfs>/kernel/mm/memory_peers/nv_mem/version, .../nv_mem_nc/version or
//   <sysfs>/module/nvidia_peermem/version exists (what NCCL checks);
// - dma-buf: on a fresh PD, ibv_reg_dmabuf_mr(pd, 0, 0, 0, fd -1, 0) must fail with EBADF;
// - registration: when a CUDA context is current on the calling thread (NCCL's init thread has
//   one), a small cuMemAlloc'ed buffer is given to ibv_reg_mr; NICs that accept CUDA pointers
//   without peermem (vroce does) pass. No context is ever created.
#pragma once

#include <memory>
#include <string>

#include "core/memory/gdr.h"
#include "verbs/context.h"

namespace roce {

PeermemCheck check_peermem(const std::string& sysfs_root);
DmabufCheck probe_dmabuf(const std::shared_ptr<verbs::Context>& context);
CudaRegistrationProbe probe_cuda_registration(const std::shared_ptr<verbs::Context>& context);

// All three for one device. dmabuf_enabled = NCCL_ROCE_DMABUF (false skips the probe).
GdrSupport detect_gdr(const std::shared_ptr<verbs::Context>& context, const std::string& sysfs_root,
                      bool dmabuf_enabled);

}  // namespace roce
