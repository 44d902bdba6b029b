// GPUDirect downgrade check at run time: see gdr_staging.h.
#include "core/memory/gdr_staging.h"

#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>

#include "core/memory/cuda_driver.h"
#include "nccl_net/types.h"
#include "util/log.h"

namespace roce {
namespace {

struct Policy {
  std::mutex mutex;
  bool require_gdr = false;
  std::string sysfs_root = "/sys";
  GdrLevelSetting gdr_level = read_gdr_level(nullptr);  // NCCL_NET_GDR_LEVEL as init read it
  std::set<std::string> warned;                         // devices already warned about
};

Policy& policy() {
  static Policy p;
  return p;
}

std::optional<std::string> real_path(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return std::nullopt;
  }
  return std::string(resolved);
}

std::optional<int> read_numa_node(const std::optional<std::string>& pci_dir) {
  if (!pci_dir) {
    return std::nullopt;
  }
  std::ifstream in(*pci_dir + "/numa_node");
  int node = -1;
  if (in >> node) {
    return node;
  }
  return std::nullopt;
}

}  // namespace

std::optional<GpuSeen> current_gpu(const std::string& sysfs_root) {
  const auto attached = cuda::Driver::attach();
  if (!attached) {
    return std::nullopt;
  }
  const cuda::Driver& driver = **attached;
  cuda::Context context = nullptr;
  if (driver.ctx_get_current(&context) != 0 || context == nullptr) {
    return std::nullopt;
  }
  GpuSeen seen;
  cuda::Device device = -1;
  if (const cuda::Result r = driver.ctx_get_device(&device); r != 0) {
    seen.description = fmt::format("the GPU of the current CUDA context (cuCtxGetDevice: {})",
                                   driver.error_name(r));
    return seen;
  }
  const std::optional<std::string> bus_id = driver.pci_bus_id(device);
  if (!bus_id) {
    seen.description = fmt::format("GPU {} (PCI bus id not readable)", device);
    return seen;
  }
  seen.description = fmt::format("GPU {} (PCI {})", device, *bus_id);
  seen.sysfs_path = real_path(sysfs_root + "/bus/pci/devices/" + *bus_id);
  seen.numa_node = read_numa_node(seen.sysfs_path);
  return seen;
}

void StagingRecord::note(bool device_memory, uintptr_t addr, size_t size) {
  if (device_memory) {
    ++evidence.device_registrations;
    return;
  }
  ++evidence.host_registrations;
  evidence.last_host_addr = addr;
  evidence.last_host_size = size;
  if (!gpu_looked_up) {
    gpu_looked_up = true;
    std::string root;
    {
      std::lock_guard lock(policy().mutex);
      root = policy().sysfs_root;
    }
    gpu = current_gpu(root);
  }
}

void set_staging_policy(bool require_gdr, const std::string& sysfs_root) {
  // NCCL reads NCCL_NET_GDR_LEVEL when it builds its topology, before any connection: so does
  // this, once, at init, rather than on the progress thread at every comm's first receive.
  GdrLevelSetting gdr_level = read_gdr_level(std::getenv("NCCL_NET_GDR_LEVEL"));
  std::lock_guard lock(policy().mutex);
  policy().require_gdr = require_gdr;
  policy().sysfs_root = sysfs_root;
  policy().gdr_level = std::move(gdr_level);
}

std::optional<std::string> check_first_receive(const StagingDevice& device,
                                               const StagingRecord& record, uintptr_t addr,
                                               size_t size) {
  StagingInputs in;
  in.gdr_offered = (device.ptr_support & (NCCL_PTR_CUDA | NCCL_PTR_DMABUF)) != 0;
  in.gpu_in_play = record.gpu.has_value();
  in.evidence = record.evidence;
  GdrLevelSetting gdr_level;
  {
    std::lock_guard lock(policy().mutex);
    gdr_level = policy().gdr_level;
  }
  in.gdr_turned_off = gdr_level.level == 0;
  in.first_recv_addr = addr;
  in.first_recv_size = size;
  const StagingVerdict verdict = judge_staging(in);
  ROCE_TRACE(NCCL_NET, "dev {}: receive staging: {} ({} host, {} GPU registrations)", device.name,
             staging_verdict_name(verdict), record.evidence.host_registrations,
             record.evidence.device_registrations);
  if (verdict != StagingVerdict::HostStaged) {
    return std::nullopt;
  }
  DowngradeFacts facts;
  facts.gpu = record.gpu->description;
  facts.gpu_path = record.gpu->sysfs_path;
  facts.nic = device.name;
  facts.nic_path = device.nic_pci_path;
  if (facts.gpu_path && facts.nic_path) {
    facts.distance = pci_distance(*facts.gpu_path, *facts.nic_path, record.gpu->numa_node,
                                  read_numa_node(facts.nic_path));
  }
  facts.gdr_level = gdr_level;
  std::lock_guard lock(policy().mutex);
  if (policy().require_gdr) {
    return format_downgrade(facts, true);
  }
  if (policy().warned.insert(device.name).second) {
    ROCE_WARN(NCCL_NET | NCCL_INIT, "dev {}: {}", device.name, format_downgrade(facts, false));
  }
  return std::nullopt;
}

GpuDmabufCheck check_gpu_dmabuf() {
  const auto attached = cuda::Driver::attach();
  if (!attached) {
    return {false, fmt::format("no GPU to prove it on ({})", attached.error())};
  }
  const cuda::Driver& driver = **attached;
  if (!driver.has_device_queries()) {
    return {false,
            "no GPU to prove it on (the loaded libcuda.so.1 lacks cuCtxGetDevice, "
            "cuDeviceGetCount or cuDeviceGetAttribute)"};
  }
  cuda::Device device = -1;
  cuda::Context context = nullptr;
  if (driver.ctx_get_current(&context) != 0 || context == nullptr ||
      driver.ctx_get_device(&device) != 0) {
    int count = 0;
    if (const cuda::Result r = driver.device_get_count(&count); r != 0) {
      return {false,
              fmt::format("no GPU to prove it on (cuDeviceGetCount: {})", driver.error_name(r))};
    }
    if (count == 0) {
      return {false, "no GPU to prove it on (the CUDA driver sees no device)"};
    }
    if (const cuda::Result r = driver.device_get(&device, 0); r != 0) {
      return {false, fmt::format("no GPU to prove it on (cuDeviceGet: {})", driver.error_name(r))};
    }
  }
  int supported = 0;
  if (const cuda::Result r =
          driver.device_get_attribute(&supported, cuda::kAttrDmaBufSupported, device);
      r != 0) {
    return {false, fmt::format("GPU {} cannot say (cuDeviceGetAttribute(DMA_BUF_SUPPORTED): {})",
                               device, driver.error_name(r))};
  }
  if (supported == 0) {
    return {false, fmt::format("GPU {}'s driver cannot export dma-buf "
                               "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0: it needs the NVIDIA "
                               "open kernel modules and Linux 5.12+)",
                               device)};
  }
  return {true, fmt::format("GPU {} exports dma-buf", device)};
}

}  // namespace roce
