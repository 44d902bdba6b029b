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
// The Prometheus families of the .prom file, in the order written. Every comm has one sample
// of each counter, two of each latency gauge (percentile="50" and "99"; cts wait: send comms
// only); nccl_roce_port_increase_total has one sample per device and readable port counter.
// Checked by promtool and served by node_exporter's textfile collector in test/scripts
// (test_prometheus.py); contrib/grafana's dashboard plots them.
struct PrometheusFamily {
  const char* name;
  const char* type;
  const char* help;
};
inline constexpr PrometheusFamily kPrometheusFamilies[] = {
    {"nccl_roce_comm_messages_total", "counter", "Messages completed on the comm."},
    {"nccl_roce_comm_bytes_total", "counter", "Bytes completed on the comm."},
    {"nccl_roce_comm_errors_total", "counter", "Requests that ended in an error."},
    {"nccl_roce_comm_stall_warnings_total", "counter", "Stall warnings the comm gave."},
    {"nccl_roce_comm_completion_seconds", "gauge",
     "isend or irecv, posted to completion, percentile (label percentile: 50, 99) of the "
     "sampled requests since the comm was connected."},
    {"nccl_roce_comm_cts_wait_seconds", "gauge",
     "Send comms: time an isend waited for the peer's clear-to-send, percentile (label "
     "percentile: 50, 99) since the comm was connected."},
    {"nccl_roce_port_increase_total", "counter",
     "Increase of the port's sysfs counter (label counter: the file under hw_counters or "
     "counters; data counters in 4-byte words, as in sysfs) since the plugin's init."},
};

// With `fabric`, one nccl_roce_port_increase_total sample per device and readable counter.
std::string prometheus_text(const std::vector<CommStatsSnapshot>& all, const ProcessInfo& process,
                            const std::vector<FabricCounterWatch::Reading>& fabric = {});
// The reading of the comm's device among `fabric`, or nullptr.
const FabricCounterWatch::Reading* fabric_of(
    const CommStatsSnapshot& s, const std::vector<FabricCounterWatch::Reading>& fabric);

// NCCL_ROCE_STATS_FILE's pattern: %h the host name, %p the pid, %% a percent sign.
std::string expand_path(std::string_view pattern, std::string_view host, int pid);

}  // namespace roce::telemetry
