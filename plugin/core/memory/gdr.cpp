// GPUDirect decisions: see gdr.h.
#include "core/memory/gdr.h"

#include <fmt/format.h>

#include <cerrno>

#include "nccl_net/types.h"
#include "verbs/error.h"

namespace roce {

DmabufCheck classify_dmabuf_probe(int error_number) {
  switch (error_number) {
    case EBADF:
      return {DmabufStatus::Supported, "ibv_reg_dmabuf_mr(fd -1) answered EBADF as expected"};
    case EOPNOTSUPP:
    case EPROTONOSUPPORT:
    case ENOSYS:
      return {DmabufStatus::Unsupported,
              fmt::format("ibv_reg_dmabuf_mr answered {}", verbs::errno_text(error_number))};
    case 0:
      return {DmabufStatus::Unexpected,
              "ibv_reg_dmabuf_mr accepted fd -1, which no dma-buf capable driver does"};
    default:
      return {DmabufStatus::Unexpected,
              fmt::format("ibv_reg_dmabuf_mr(fd -1) answered {} instead of EBADF",
                          verbs::errno_text(error_number))};
  }
}

int GdrSupport::ptr_support() const noexcept {
  int flags = NCCL_PTR_HOST;
  if (cuda_pointers()) {
    flags |= NCCL_PTR_CUDA;
  }
  if (dmabuf) {
    flags |= NCCL_PTR_DMABUF;
  }
  return flags;
}

std::string GdrSupport::banner_mode() const {
  if (!dmabuf || dmabuf_gpu_proven) {
    return mode;
  }
  std::string others;
  if (peermem) {
    others = "peermem, ";
  } else if (registration_probe.registered()) {
    others = "cuda-registration, ";
  }
  return fmt::format("{}dma-buf: NIC ready, {}", others,
                     dmabuf_gpu.empty() ? "no GPU to prove it on" : dmabuf_gpu);
}

GdrSupport decide_gdr(const PeermemCheck& peermem, const DmabufCheck& dmabuf,
                      const CudaRegistrationProbe& registration) {
  GdrSupport support;
  support.peermem = peermem.present;
  support.dmabuf = dmabuf.supported();
  support.registration_probe = registration;

  if (support.peermem && support.dmabuf) {
    support.mode = "peermem+dma-buf";
  } else if (support.peermem) {
    support.mode = "peermem";
  } else if (support.dmabuf) {
    support.mode = registration.registered() ? "dma-buf+cuda-registration" : "dma-buf";
  } else if (registration.registered()) {
    support.mode = "cuda-registration";
  } else {
    support.mode = "none";
  }

  std::string peermem_text;
  if (peermem.present) {
    peermem_text = fmt::format("found {}", peermem.found);
  } else {
    peermem_text = "none of ";
    for (size_t i = 0; i < peermem.checked.size(); ++i) {
      peermem_text += (i == 0 ? "" : ", ") + peermem.checked[i];
    }
    peermem_text += " exists";
  }
  support.checked = fmt::format("peermem: {}; dma-buf: {} ({}); cuda registration probe: {}{}{}",
                                peermem_text, dmabuf_status_name(dmabuf.status), dmabuf.detail,
                                cuda_probe_status_name(registration.status),
                                registration.detail.empty() ? "" : " - ", registration.detail);
  return support;
}

Status check_gdr_requirement(const GdrSupport& support, bool require_gdr) {
  if (!require_gdr || support.usable()) {
    return {};
  }
  return failure(fmt::format(
      "NCCL_ROCE_REQUIRE_GDR=1 but GPUDirect RDMA is not usable ({}); to fix: load the "
      "nvidia-peermem module (modprobe nvidia-peermem), or use a kernel and NIC driver with "
      "dma-buf support (Linux 5.12+, rdma-core 34+, NVIDIA open kernel modules) and leave "
      "NCCL_ROCE_DMABUF unset; or unset NCCL_ROCE_REQUIRE_GDR to run with host staging",
      support.checked));
}

RelaxedOrdering decide_relaxed_ordering(int setting, bool have_reg_mr_iova2) {
  // The note is logged on its own line: it names its subject.
  if (setting == 0) {
    return {false, "PCIe relaxed ordering off (NCCL_IB_PCI_RELAXED_ORDERING=0)"};
  }
  if (have_reg_mr_iova2) {
    return {true, setting == 1 ? "PCIe relaxed ordering on (NCCL_IB_PCI_RELAXED_ORDERING=1)"
                               : "PCIe relaxed ordering on (auto: ibv_reg_mr_iova2 is available)"};
  }
  return {false, setting == 1 ? "PCIe relaxed ordering off: NCCL_IB_PCI_RELAXED_ORDERING=1 asks "
                                "for it but the library has no ibv_reg_mr_iova2 (IBVERBS_1.8)"
                              : "PCIe relaxed ordering off (auto: the library has no "
                                "ibv_reg_mr_iova2)"};
}

const char* dmabuf_status_name(DmabufStatus status) noexcept {
  switch (status) {
    case DmabufStatus::Supported:
      return "supported";
    case DmabufStatus::Unsupported:
      return "unsupported";
    case DmabufStatus::NoSymbol:
      return "unavailable";
    case DmabufStatus::Unexpected:
      return "not established";
    case DmabufStatus::Disabled:
      return "disabled";
  }
  return "?";
}

const char* cuda_probe_status_name(CudaProbeStatus status) noexcept {
  switch (status) {
    case CudaProbeStatus::NoCuda:
      return "not run (libcuda not loaded)";
    case CudaProbeStatus::NoContext:
      return "not run (no current CUDA context)";
    case CudaProbeStatus::CudaError:
      return "failed (CUDA error)";
    case CudaProbeStatus::Refused:
      return "refused by the NIC";
    case CudaProbeStatus::Registered:
      return "accepted";
  }
  return "?";
}

}  // namespace roce
