// Output: nccl-tests-style tables (a '#' header describing the run, one row per size, then the
// totals) and the same content as one JSON document for --json. Only rank 0 prints.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "member_traffic.h"
#include "net_plugin.h"
#include "options.h"
#include "results.h"

namespace roce::tools {
class JsonWriter;
}  // namespace roce::tools

namespace roce::bench {

struct RunInfo {
  std::string version;
  std::string date;  // UTC, ISO 8601
  std::string host;
  std::string command;
  std::string cpus;         // "2 CPUs, load average 1.02 at start, 0.97 at end"
  std::string load_at_end;  // "0.97": the footer's, printed after the rows
  std::string job_source;   // set when torchrun, mpirun or srun gave the rank (job_env.h)
  // The libibverbs the plugin and the raw path load, and whether it is vroce: then every
  // figure is vroce's, made by this machine's CPUs, not a fabric's.
  std::string verbs_library;
  bool vroce = false;
  bool interrupted = false;  // Ctrl-C: the rows are those measured before it

  Mode mode = Mode::AllReduce;
  Api api = Api::V8;
  Path path = Path::Plugin;
  bool raw_cts = false;  // the raw path waits for a clear-to-send per message (--raw-cts)
  int nranks = 0;
  int window = 0;
  std::size_t slice_bytes = 0;
  std::string memory;       // "host" or "cuda (<GPU name>)"
  std::string plugin_path;  // empty for --raw
  std::string plugin_name;
  std::string plugin_symbol;
  std::string registration;  // "regMr HOST", ...
  bool flush = false;
  std::vector<std::string> ranks;  // one description per rank
  // --vdevice: the members given, what was made of them, and what each rank's members carried
  // by their port counters (read under member_counters_root).
  std::vector<int> vdevice_members;
  std::string vdevice;
  std::vector<MemberTraffic> member_traffic;
  std::string member_counters_root;
  std::size_t plugin_warnings = 0;
  std::string profiler_events;             // v10/v11: what the plugin reported to NCCL's profiler
  std::vector<CallCounters> plugin_calls;  // per rank, over the whole run
  std::vector<CallCounters> plugin_timed_calls;  // per rank, inside the timed regions
};

// The plugin/raw ratio per size: pingpong compares median one-way latency (lower is better),
// bw/bibw compare algbw (higher is better).
struct Ratio {
  std::size_t bytes = 0;
  double plugin = 0;
  double raw = 0;
  double ratio = 0;
};
std::vector<Ratio> compare(Mode mode, const Series& plugin, const Series& raw);

// The fields every JSON document starts with: tool, version, date, host, command, cpus, mode.
void write_run_fields(tools::JsonWriter& j, const RunInfo& info);
// "fabric": {"verbs_library", "vroce", "note" (vroce only)}, and "job_source" when set.
void write_fabric_fields(tools::JsonWriter& j, const RunInfo& info);
// "name": {"p50", "p90", "p99", "min", "max", "mean"}.
void write_percentiles(tools::JsonWriter& j, const char* name, const Percentiles& p);

// The lines known before the first row; print_footer those known at the end.
void print_header(std::FILE* out, const RunInfo& info);
void print_footer(std::FILE* out, const RunInfo& info, std::size_t sizes_done,
                  std::size_t sizes_planned);

// vroce's figures are its CPUs', not a fabric's: the line the header and the tp report print.
inline constexpr const char* kVroceFiguresNote =
    "vroce's CPU figures, not a fabric's: vroce emulates the NIC in software on this "
    "machine's CPUs";

// The tables, a row printed (and flushed) as soon as it is measured, as nccl-tests does. One
// series: its own table. Several (--compare-raw): one table, size by size, with a path column,
// then each series' totals. `out` nullptr prints nothing (--json on stdout).
class TableStream {
 public:
  TableStream(std::FILE* out, Mode mode, std::vector<std::string> labels);
  void begin();
  void row(std::size_t series_index, const Row& row);
  void finish(int nranks, const std::vector<Series>& series);

 private:
  std::FILE* out_;
  Mode mode_;
  std::vector<std::string> labels_;
};
// `raw_cts`: the raw series is the clear-to-send protocol's floor, not verbs' own.
void print_comparison(std::FILE* out, Mode mode, bool raw_cts, const std::vector<Ratio>& ratios);
std::string render_json(const RunInfo& info, const std::vector<Series>& series,
                        const std::vector<Ratio>& ratios, std::size_t wrong_total, bool passed,
                        const std::string& error);

// Sum of #wrong over every row of every series.
std::size_t total_wrong(const std::vector<Series>& series);

}  // namespace roce::bench
