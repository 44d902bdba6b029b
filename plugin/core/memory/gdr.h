// GPUDirect RDMA: what the checks found and what follows from it (ptrSupport for NCCL, the mode
// shown in the init banner, the NCCL_ROCE_REQUIRE_GDR verdict, relaxed ordering). Pure decisions
// over the probe results of gdr_probe.h, unit-tested without a GPU or a NIC.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "roce/result.h"

namespace roce {

// nvidia-peermem (or the older nv_peer_mem): the NIC driver can pin CUDA memory itself.
struct PeermemCheck {
  bool present = false;
  std::string found;                 // the path that exists
  std::vector<std::string> checked;  // every path looked at
};

enum class DmabufStatus {
  Supported,    // ibv_reg_dmabuf_mr(fd -1) failed with EBADF: the kernel path exists
  Unsupported,  // EOPNOTSUPP / EPROTONOSUPPORT: the provider or kernel lacks it
  NoSymbol,     // the library has no ibv_reg_dmabuf_mr (IBVERBS_1.12)
  Unexpected,   // any other answer; not claimed as supported
  Disabled,     // NCCL_ROCE_DMABUF=0
};

struct DmabufCheck {
  DmabufStatus status = DmabufStatus::NoSymbol;
  std::string detail;  // "EBADF as expected", "EOPNOTSUPP", ...
  bool supported() const noexcept { return status == DmabufStatus::Supported; }
};

// The answer of ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0): errno (0 when it returned an MR).
DmabufCheck classify_dmabuf_probe(int error_number);

enum class CudaProbeStatus {
  NoCuda,      // libcuda.so.1 is not loaded in this process
  NoContext,   // no CUDA context is current on the calling thread (we never create one)
  CudaError,   // cuMemAlloc or another driver call failed
  Refused,     // ibv_reg_mr refused the device pointer
  Registered,  // ibv_reg_mr accepted a CUDA device pointer
};

struct CudaRegistrationProbe {
  CudaProbeStatus status = CudaProbeStatus::NoCuda;
  std::string detail;
  bool registered() const noexcept { return status == CudaProbeStatus::Registered; }
};

struct GdrSupport {
  bool peermem = false;
  bool dmabuf = false;
  CudaRegistrationProbe registration_probe;
  std::string mode;     // "peermem", "dma-buf", "peermem+dma-buf", "cuda-registration", "none"
  std::string checked;  // one line: every check and its answer, for logs and errors
  // The GPU half of dma-buf (gdr_staging.h's check_gpu_dmabuf): a GPU whose driver reports
  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED. Without it the NIC's readiness proves nothing.
  bool dmabuf_gpu_proven = false;
  std::string dmabuf_gpu;  // "GPU 0 exports dma-buf", "no GPU to prove it on (...)"

  // CUDA pointers can go to regMr (peermem, or the device takes them without it).
  bool cuda_pointers() const noexcept { return peermem || registration_probe.registered(); }
  bool usable() const noexcept { return cuda_pointers() || dmabuf; }
  // NCCL_PTR_HOST, plus NCCL_PTR_CUDA and NCCL_PTR_DMABUF as established.
  int ptr_support() const noexcept;
  // The mode as the init banner states it: dma-buf is claimed only when both halves are proven
  // ("dma-buf: NIC ready, no GPU to prove it on (...)" otherwise).
  std::string banner_mode() const;
};

GdrSupport decide_gdr(const PeermemCheck& peermem, const DmabufCheck& dmabuf,
                      const CudaRegistrationProbe& registration);

// With NCCL_ROCE_REQUIRE_GDR=1 and nothing usable, fails with the init error, naming what was
// checked and how to fix it; succeeds when GPUDirect is usable or not required.
Status check_gdr_requirement(const GdrSupport& support, bool require_gdr);

// Relaxed ordering on registrations: NCCL_IB_PCI_RELAXED_ORDERING 0 = off, 1 = on, 2 = auto; on
// needs ibv_reg_mr_iova2 (IBVERBS_1.8). Asking for 1 without it is reported in `note`.
struct RelaxedOrdering {
  bool enabled = false;
  std::string note;  // why, for the init log
};
RelaxedOrdering decide_relaxed_ordering(int setting, bool have_reg_mr_iova2);

const char* dmabuf_status_name(DmabufStatus status) noexcept;
const char* cuda_probe_status_name(CudaProbeStatus status) noexcept;

}  // namespace roce
