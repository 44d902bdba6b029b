// What the stats file holds, rendered from snapshots (pure, unit-tested): one JSON object per
// comm and line (JSON Lines, appended at every write) and a Prometheus text-format file for node
// exporters' textfile collector (rewritten at every write), both with the devices' fabric
// counters since init. tools/roce-stats reads the JSON
// lines of every rank and prints one table across ranks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "telemetry/comm_stats.h"
#include "telemetry/fabric_counters.h"

namespace roce::telemetry {

struct ProcessInfo {
  std::string host;
  int pid = 0;
  std::string rank;   // RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID when set; else empty
  double time_s = 0;  // seconds since the epoch, when the snapshot was taken
};

ProcessInfo current_process();

// One line, ending in '\n'. With `fabric` (the comm's device's port counters), the line carries
// "fabric_counters" (increases since init, null where unreadable) and "fabric_verdict".
std::string json_line(const CommStatsSnapshot& s, const ProcessInfo& process,
                      const FabricCounterWatch::Reading* fabric = nullptr);
// With `fabric`, one nccl_roce_fabric_counter_increase sample per device and counter.
std::string prometheus_text(const std::vector<CommStatsSnapshot>& all, const ProcessInfo& process,
                            const std::vector<FabricCounterWatch::Reading>& fabric = {});
// The reading of the comm's device among `fabric`, or nullptr.
const FabricCounterWatch::Reading* fabric_of(
    const CommStatsSnapshot& s, const std::vector<FabricCounterWatch::Reading>& fabric);

// NCCL_ROCE_STATS_FILE's pattern: %h the host name, %p the pid, %% a percent sign.
std::string expand_path(std::string_view pattern, std::string_view host, int pid);

}  // namespace roce::telemetry
