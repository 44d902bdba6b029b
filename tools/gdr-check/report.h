// What gdr-check found, and its three output forms: text for people, one line per mode for
// diagnose_roce.sh (--brief), and JSON.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "options.h"

namespace gdr {

struct ModeResult {
  std::string mode;  // "pointer" (ibv_reg_mr, nvidia-peermem) or "dmabuf"
  bool ok = false;
  std::string reason;     // why it failed
  double write_gbps = 0;  // measured, GB/s (1e9 bytes per second)
  double read_gbps = 0;
  size_t bytes = 0;  // per transfer
};

struct Report {
  int exit_status = 0;
  std::string error;  // set when no mode could be tried (no GPU, no RDMA device)
  std::string gpu;    // "GPU 0 NVIDIA H200 (0000:18:00.0)"
  std::string path;   // Loopback::describe()
  std::vector<ModeResult> modes;
};

void print_report(const Report& report, OutputFormat format);

}  // namespace gdr
