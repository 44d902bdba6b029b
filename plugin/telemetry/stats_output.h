// What the stats file holds, rendered from snapshots (pure, unit-tested): one JSON object per
// comm and line (JSON Lines, appended at every write) and a Prometheus text-format file for node
// exporters' textfile collector (rewritten at every write). tools/roce-stats reads the JSON
// lines of every rank and prints one table across ranks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "telemetry/comm_stats.h"

namespace roce::telemetry {

struct ProcessInfo {
  std::string host;
  int pid = 0;
  std::string rank;   // RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID when set; else empty
  double time_s = 0;  // seconds since the epoch, when the snapshot was taken
};

ProcessInfo current_process();

// One line, ending in '\n'.
std::string json_line(const CommStatsSnapshot& s, const ProcessInfo& process);
std::string prometheus_text(const std::vector<CommStatsSnapshot>& all, const ProcessInfo& process);

// NCCL_ROCE_STATS_FILE's pattern: %h the host name, %p the pid, %% a percent sign.
std::string expand_path(std::string_view pattern, std::string_view host, int pid);

}  // namespace roce::telemetry
