// GPUDirect downgrade decisions and texts: see gdr_downgrade.h.
#include "core/memory/gdr_downgrade.h"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace roce {
namespace {

// NCCL's path type names, indexed by value (2.28's topoPathTypeStr, LOC..SYS).
constexpr std::array<const char*, 10> kPathNames = {"LOC", "NVL", "NVB", "C2C", "PIX",
                                                    "PXB", "P2C", "PXN", "PHB", "SYS"};
// NCCL's old numeric levels 0..5 (paths.cc levelsOldToNew).
constexpr std::array<int, 6> kOldLevels = {0, 4, 5, 8, 9, 9};
constexpr int kDefaultGdrLevel = 5;  // PXB

// The components of a sysfs PCI path from its host bridge on: "pci0000:00", "0000:00:01.0", ...
std::vector<std::string> pci_chain(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = path.find('/', start);
    const std::string part =
        path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part.rfind("pci", 0) == 0) {
      parts.clear();  // the host bridge starts the chain
    }
    if (!part.empty()) {
      parts.push_back(part);
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return parts;
}

}  // namespace

StagingVerdict judge_staging(const StagingInputs& in) noexcept {
  const StagingEvidence& e = in.evidence;
  if (!in.receive_comm) {
    return StagingVerdict::SendComm;
  }
  if (e.device_registrations > 0) {
    return StagingVerdict::GpuMemory;
  }
  if (!in.gdr_offered) {
    return StagingVerdict::NotOffered;
  }
  if (e.host_registrations == 0) {
    return StagingVerdict::NoRegistration;
  }
  if (!in.gpu_in_play) {
    return StagingVerdict::NoGpu;
  }
  if (in.gdr_turned_off) {
    return StagingVerdict::TurnedOff;
  }
  if (in.first_recv_addr == e.last_host_addr && in.first_recv_size == e.last_host_size) {
    return StagingVerdict::WholeHostBuffer;
  }
  return StagingVerdict::HostStaged;
}

const char* staging_verdict_name(StagingVerdict verdict) noexcept {
  switch (verdict) {
    case StagingVerdict::SendComm:
      return "send comm (host buffers are normal with GDR read off)";
    case StagingVerdict::GpuMemory:
      return "GPU memory registered (GPUDirect in use)";
    case StagingVerdict::NotOffered:
      return "GPUDirect not offered by the device";
    case StagingVerdict::TurnedOff:
      return "host staging asked for (NCCL_NET_GDR_LEVEL=LOC)";
    case StagingVerdict::NoGpu:
      return "host memory without a CUDA context (not NCCL's transport)";
    case StagingVerdict::NoRegistration:
      return "nothing registered before the first receive";
    case StagingVerdict::WholeHostBuffer:
      return "receive into a whole registered host buffer (application or bootstrap)";
    case StagingVerdict::HostStaged:
      return "host-staged: NCCL placed the receive buffers in host memory";
  }
  return "?";
}

const char* pci_level_name(PciLevel level) noexcept {
  return kPathNames[static_cast<size_t>(level)];
}

PciDistance pci_distance(const std::string& gpu_path, const std::string& nic_path,
                         std::optional<int> gpu_numa, std::optional<int> nic_numa) {
  const std::vector<std::string> gpu = pci_chain(gpu_path);
  const std::vector<std::string> nic = pci_chain(nic_path);
  size_t common = 0;
  while (common < gpu.size() && common < nic.size() && gpu[common] == nic[common]) {
    ++common;
  }
  if (common == 0) {
    // Different root complexes: through the CPU, or across sockets.
    if (gpu_numa && nic_numa && *gpu_numa >= 0 && *gpu_numa == *nic_numa) {
      return {PciLevel::PHB,
              fmt::format("different root complexes ({} and {}) on NUMA node {}",
                          gpu.empty() ? "?" : gpu[0], nic.empty() ? "?" : nic[0], *gpu_numa)};
    }
    return {PciLevel::SYS,
            fmt::format("different root complexes ({} and {}) on NUMA nodes {} and {}",
                        gpu.empty() ? "?" : gpu[0], nic.empty() ? "?" : nic[0],
                        gpu_numa ? std::to_string(*gpu_numa) : "?",
                        nic_numa ? std::to_string(*nic_numa) : "?")};
  }
  if (common == 1) {
    return {PciLevel::PHB,
            fmt::format("only the host bridge {} in common (different root ports)", gpu[0])};
  }
  // A PCI bridge in common. Below it, a switch's downstream port and the function are two
  // levels: at most two on each side is one switch (PIX), more is a chain of them (PXB).
  const size_t gpu_below = gpu.size() - common;
  const size_t nic_below = nic.size() - common;
  if (gpu_below <= 2 && nic_below <= 2) {
    return {PciLevel::PIX, fmt::format("one PCIe bridge in common ({})", gpu[common - 1])};
  }
  return {PciLevel::PXB,
          fmt::format("PCIe bridges in common below root port {}, {} and {} levels below {}",
                      gpu[1], gpu_below, nic_below, gpu[common - 1])};
}

GdrLevelSetting read_gdr_level(const char* value) {
  if (value == nullptr) {
    return {std::nullopt, fmt::format("unset (NCCL's default: PXB = {})", kDefaultGdrLevel)};
  }
  for (size_t i = 0; i < kPathNames.size(); ++i) {
    if (std::strcmp(value, kPathNames[i]) == 0) {
      return {static_cast<int>(i), fmt::format("{} ({})", value, i)};
    }
  }
  if (value[0] >= '0' && value[0] <= '9') {
    const long old_level = std::strtol(value, nullptr, 0);
    const int level = kOldLevels[static_cast<size_t>(
        old_level < 0 || old_level >= static_cast<long>(kOldLevels.size())
            ? static_cast<long>(kOldLevels.size()) - 1
            : old_level)];
    return {level, fmt::format("{} (old numbering: {} = {})", value,
                               kPathNames[static_cast<size_t>(level)], level)};
  }
  return {std::nullopt, fmt::format("\"{}\", which NCCL does not read (so its default: PXB = {})",
                                    value, kDefaultGdrLevel)};
}

std::string format_downgrade(const DowngradeFacts& f, bool require_gdr) {
  const std::string gpu_where = f.gpu_path ? fmt::format(" at {}", *f.gpu_path) : "";
  const std::string nic_where = f.nic_path
                                    ? fmt::format(" at {}", *f.nic_path)
                                    : " (no PCI path: a virtual or software device, which NCCL "
                                      "attaches to the CPU, so at least PHB = 8 from any GPU)";
  std::string distance;
  if (f.distance) {
    distance = fmt::format("PCI distance {} = {} as NCCL computes it ({})",
                           pci_level_name(f.distance->level), static_cast<int>(f.distance->level),
                           f.distance->why);
  } else if (!f.nic_path) {
    distance = "PCI distance not readable here (the NIC has no PCI path)";
  } else {
    distance = "PCI distance not readable here (the GPU's PCI path is unknown)";
  }
  const std::string level_note =
      f.gdr_level.level && f.distance && static_cast<int>(f.distance->level) <= *f.gdr_level.level
          ? " (the distance is within it: look at NCCL's \"GPU Direct RDMA Disabled\" INFO line "
            "for its own reason)"
          : "";
  return fmt::format(
      "GPUDirect RDMA downgrade: NCCL staged this connection's receive buffers in host memory "
      "instead of GPU memory (every buffer it registered on the receive comm is host memory) "
      "for {}{} and NIC {}{}; {}; NCCL_NET_GDR_LEVEL {}{}. NCCL logs it as \"GPU Direct RDMA "
      "Disabled for GPU ... / HCA ... (distance d > l)\" and the channels run \"via NET/RoCE/n\" "
      "without /GDRDMA. To fix: disable PCIe ACS on the switches and root ports between the GPU "
      "and the NIC (setpci, or the BIOS), or put the GPU and the NIC under one PCIe switch (use "
      "the NIC closest to the GPU: NCCL_IB_HCA), or set NCCL_NET_GDR_LEVEL=SYS if the platform "
      "supports PCIe peer-to-peer across the root complex{}",
      f.gpu, gpu_where, f.nic, nic_where, distance, f.gdr_level.text, level_note,
      require_gdr ? "; NCCL_ROCE_REQUIRE_GDR=1 makes this an error (unset it to accept host "
                    "staging)"
                  : "; set NCCL_ROCE_REQUIRE_GDR=1 to make this an error");
}

}  // namespace roce
