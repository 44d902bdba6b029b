// NCCL_ROCE_STATS_FILE: a background thread that writes every comm's statistics every
// NCCL_ROCE_STATS_INTERVAL_MS (JSON lines appended to the file, the Prometheus text rewritten
// into <file>.prom), and once more when the plugin is finalized or unloaded. A file that cannot
// be written gives one WARN and the plugin carries on: telemetry never fails a job.
#pragma once

#include <string>

namespace roce::telemetry {

struct WriterSettings {
  std::string file_pattern;  // %h, %p expanded; empty: no writer
  int interval_ms = 10000;
};

// Starts the writer once per process (later calls keep the first settings).
void start_stats_writer(const WriterSettings& settings);
// Writes once more and stops the thread; safe to call when none runs, and more than once.
void stop_stats_writer() noexcept;

}  // namespace roce::telemetry
