// NCCL's silent GPUDirect downgrade, as the plugin sees it: NCCL offered GPUDirect (ptrSupport
// has NCCL_PTR_CUDA or NCCL_PTR_DMABUF) but judged the GPU too far from the NIC
// (ncclTopoCheckGdr: distance > NCCL_NET_GDR_LEVEL, PXB by default), so it put the receive
// staging buffers of a connection in host memory. The signature (docs/design.md, "GPUDirect
// downgrade"): a receive comm on which every buffer registered before its first irecv is host
// memory, while this thread has a CUDA context. Send comms are never judged: with GDR read off
// (NCCL_NET_GDR_READ=0, or pre-Ampere GPUs without NVLink peers) NCCL stages sends through host
// memory by design, and a downgrade shows on the receive comm of the same GPU and NIC.
//
// Pure decisions and texts, unit-tested without a GPU or a NIC; gdr_staging.h feeds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace roce {

// What one receive comm registered before its first irecv (api.cpp's regMr and regMrDmaBuf).
struct StagingEvidence {
  uint32_t host_registrations = 0;    // NCCL_PTR_HOST
  uint32_t device_registrations = 0;  // NCCL_PTR_CUDA or dma-buf
  // The last host registration, as given: an irecv into the whole of it is the pattern of an
  // application's own host buffer, or of NCCL's bootstrap over the plugin
  // (NCCL_OOB_NET_ENABLE=1), never of NCCL's staging buffers, whose receives are one slice.
  uintptr_t last_host_addr = 0;
  size_t last_host_size = 0;
};

struct StagingInputs {
  bool receive_comm = true;     // send comms are never judged (GDR read off stages sends on host)
  bool gdr_offered = false;     // the device's ptrSupport has NCCL_PTR_CUDA or NCCL_PTR_DMABUF
  bool gpu_in_play = false;     // a CUDA context was current when a host buffer was registered
  bool gdr_turned_off = false;  // NCCL_NET_GDR_LEVEL=LOC: the operator asked for host staging
  StagingEvidence evidence;
  uintptr_t first_recv_addr = 0;  // the first irecv's first buffer
  size_t first_recv_size = 0;
};

enum class StagingVerdict {
  SendComm,         // a send comm: host LL128/SIMPLE buffers are normal with GDR read off
  GpuMemory,        // a CUDA or dma-buf buffer was registered: GPUDirect is in use
  NotOffered,       // the device offers no GPUDirect: host memory is all NCCL could use
  TurnedOff,        // NCCL_NET_GDR_LEVEL=LOC: host staging was asked for
  NoGpu,            // no CUDA context when host memory was registered: not NCCL's transport
  NoRegistration,   // nothing registered before the first irecv (only empty receives)
  WholeHostBuffer,  // the irecv covers a whole registered host buffer: application or bootstrap
  HostStaged,       // the downgrade
};

StagingVerdict judge_staging(const StagingInputs& in) noexcept;
const char* staging_verdict_name(StagingVerdict verdict) noexcept;

// NCCL's path types (src/graph/topo.h in 2.28) between a GPU and a NIC over PCI.
enum class PciLevel { PIX = 4, PXB = 5, PHB = 8, SYS = 9 };
const char* pci_level_name(PciLevel level) noexcept;

// The distance NCCL's topology would give the two PCI functions, from their sysfs paths
// (realpaths under /sys/devices: ".../pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/..."):
// both under one PCIe bridge, at most one switch between them: PIX; several bridges below one
// root port: PXB; only the host bridge (root complex) in common, or different root complexes
// of one NUMA node: PHB; different NUMA nodes (or unknown): SYS. An approximation of NCCL's
// topology search, which flattens switches the same way; NCCL's INFO line "GPU Direct RDMA
// Disabled for GPU g / HCA h (distance d > l)" has its exact value.
struct PciDistance {
  PciLevel level = PciLevel::SYS;
  std::string why;  // "common ancestor 0000:00:01.0 (one bridge)", ...
};
PciDistance pci_distance(const std::string& gpu_path, const std::string& nic_path,
                         std::optional<int> gpu_numa, std::optional<int> nic_numa);

// NCCL_NET_GDR_LEVEL as NCCL reads it: a name (LOC, PIX, PXB, PHB, SYS, ...) or a number;
// nullopt when unset or unreadable. The text says which.
struct GdrLevelSetting {
  std::optional<int> level;
  std::string text;  // "unset (NCCL's default: PXB = 5)", "SYS (9)", ...
};
GdrLevelSetting read_gdr_level(const char* value);

// Everything the message names.
struct DowngradeFacts {
  std::string gpu;                      // "GPU 0 (PCI 0000:17:00.0)", or what is known
  std::optional<std::string> gpu_path;  // sysfs PCI path of the GPU
  std::string nic;                      // plugin device name
  std::optional<std::string> nic_path;  // sysfs PCI path of the NIC; none for vroce
  std::optional<PciDistance> distance;  // when both paths are known
  GdrLevelSetting gdr_level;
};

// The error (require_gdr) or the WARN (once per device) for a downgrade on `facts`.
std::string format_downgrade(const DowngradeFacts& facts, bool require_gdr);

}  // namespace roce
