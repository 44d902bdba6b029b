// The run-time side of the GPUDirect downgrade check (decisions in gdr_downgrade.h): what each
// receive comm registered, the GPU of the registering thread's CUDA context (through the loaded
// libcuda, cuda_driver.h), the verdict at the comm's first irecv, and the once-per-device WARN.
// Also the GPU half of the dma-buf proof for the init banner. Nothing here runs on the data
// path's common path: a receive comm asks once, at its first irecv.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/memory/gdr_downgrade.h"

namespace roce {

// The GPU of the calling thread's current CUDA context.
struct GpuSeen {
  std::string description;  // "GPU 0 (PCI 0000:17:00.0)", or what could be read
  std::optional<std::string> sysfs_path;
  std::optional<int> numa_node;
};
// nullopt without libcuda in the process or without a current context on this thread.
std::optional<GpuSeen> current_gpu(const std::string& sysfs_root);

// What one receive comm registered, fed by regMr/regMrDmaBuf until its first irecv.
struct StagingRecord {
  StagingEvidence evidence;
  std::optional<GpuSeen> gpu;  // looked up at the first host registration
  bool gpu_looked_up = false;
  void note(bool device_memory, uintptr_t addr, size_t size);
};

// NCCL_ROCE_REQUIRE_GDR and the sysfs root, set by init, which also reads NCCL_NET_GDR_LEVEL.
void set_staging_policy(bool require_gdr, const std::string& sysfs_root);

// The verdict at a receive comm's first irecv (buffer addr, size). A downgrade returns the
// error text when NCCL_ROCE_REQUIRE_GDR=1; without it, WARNs once per device and returns
// nullopt.
// device: the plugin device's name; nic_pci_path: its sysfs PCI path (none for vroce);
// ptr_support: what the device offers NCCL.
struct StagingDevice {
  std::string name;
  std::optional<std::string> nic_pci_path;
  int ptr_support = 0;
};
std::optional<std::string> check_first_receive(const StagingDevice& device,
                                               const StagingRecord& record, uintptr_t addr,
                                               size_t size);

// The GPU half of the dma-buf proof: a GPU whose driver reports
// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 1 (the current context's device, else device 0).
struct GpuDmabufCheck {
  bool proven = false;
  std::string detail;  // "GPU 0 exports dma-buf", "no GPU to prove it on (...)", ...
};
GpuDmabufCheck check_gpu_dmabuf();

}  // namespace roce
