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
  bool summary = false;  // NCCL_ROCE_STATS=1: say where the statistics go even without INFO
};

// Where the statistics go, in one line: the files (JSON lines, <file>.prom) or that there are
// none, and where NCCL_ROCE_STATS=1's close-time summaries appear. `path`: the expanded file.
std::string stats_destination(const WriterSettings& settings, const std::string& path);

// Starts the writer once per process (later calls keep the first settings), and says once where
// the statistics go: an INFO line (subsystem NET), which with NCCL_ROCE_STATS=1 goes to stderr
// when NCCL_DEBUG would hide it, since the operator asked for statistics and must find them.
void start_stats_writer(const WriterSettings& settings);
// Writes once more and stops the thread; safe to call when none runs, and more than once.
void stop_stats_writer() noexcept;

}  // namespace roce::telemetry
