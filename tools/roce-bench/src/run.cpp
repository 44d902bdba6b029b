// One rank's run, and --init-check.
#include "run.h"

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "allreduce.h"
#include "cuda_driver.h"
#include "errors.h"
#include "init_check_hint.h"
#include "interrupt.h"
#include "json_writer.h"
#include "launcher.h"
#include "locations.h"
#include "member_traffic.h"
#include "nccl_logger.h"
#include "net_plugin.h"
#include "p2p_modes.h"
#include "patterns.h"
#include "plugin_endpoint.h"
#include "poller.h"
#include "profiler_check.h"
#include "raw_endpoint.h"
#include "rendezvous.h"
#include "report.h"
#include "sweep.h"
#include "tp_mode.h"
#include "vroce_sysfs.h"

#ifndef ROCE_BENCH_VERSION
#define ROCE_BENCH_VERSION "0.0.0"
#endif

namespace roce::bench {
namespace {

using Clock = std::chrono::steady_clock;

// VROCE_DEVICES, which a rank started by hand needs for --vroce-sysfs: its own vroce device.
std::string own_vroce_devices() {
  const char* value = std::getenv("VROCE_DEVICES");
  if (value == nullptr || *value == '\0') {
    throw UsageError(
        "--vroce-sysfs with --rank needs VROCE_DEVICES (vroce's device for this rank)");
  }
  return value;
}

// --compare-raw alternates the two paths in this many blocks per size.
constexpr int kCompareBlocks = 10;

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The first figure of /proc/loadavg: on a shared machine, what else was running.
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string first;
  in >> first;
  return first.empty() ? "?" : first;
}

std::string hostname() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::string command_line(const std::vector<std::string>& args) {
  std::size_t shown = args.size();
  if (std::getenv(kLaunchedEnv) != nullptr && shown >= kAppendedArgs) {
    shown -= kAppendedArgs;
  }
  std::string text = "roce-bench";
  for (std::size_t i = 0; i < shown; ++i) {
    text += " " + args[i];
  }
  return text;
}

std::uint64_t random_u64() {
  std::uint64_t value = 0;
  if (getrandom(&value, sizeof(value), 0) != static_cast<ssize_t>(sizeof(value))) {
    constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15;
    value = static_cast<std::uint64_t>(static_cast<unsigned>(getpid())) * kGolden;
  }
  return value;
}

void install_logger(int rank) {
  const auto filter = parse_log_filter(std::getenv("NCCL_DEBUG"), std::getenv("NCCL_DEBUG_SUBSYS"));
  if (!filter) {
    throw UsageError(filter.error());
  }
  configure_logger(*filter, rank);
}

std::string plugin_path_of(const Options& options) {
  return options.plugin_path.empty() ? default_plugin_path() : options.plugin_path;
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

std::string memory_text(const Options& options) {
  if (!options.cuda) {
    return "host";
  }
  auto& cuda = CudaDriver::instance();
  return fmt::format("cuda (GPU {}: {}, sm_{}x)", cuda.device(), cuda.device_name(),
                     cuda.compute_capability_major());
}

// Rank 0 prints progress on stderr once a run has taken a while, at most once a second.
class Progress {
 public:
  Progress(bool enabled, std::size_t total) : enabled_(enabled), total_(total) {}
  void size_done(std::size_t bytes) {
    ++done_;
    if (!enabled_) {
      return;
    }
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < 2.0 || (now - last_ < std::chrono::seconds(1) && done_ != total_)) {
      return;
    }
    last_ = now;
    std::fprintf(stderr, "roce-bench: [%zu/%zu] %zu B done, %.1f s elapsed\n", done_, total_, bytes,
                 elapsed);
  }

 private:
  bool enabled_;
  std::size_t total_;
  std::size_t done_ = 0;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_{};
};

void check_properties_for_run(const NetProperties& props, const Options& options) {
  if (props.net_device_type != NCCL_NET_DEVICE_HOST) {
    throw BenchError("plugin device " + props.name + " has netDeviceType " +
                     std::to_string(props.net_device_type) +
                     "; roce-bench drives the host path (NCCL_NET_DEVICE_HOST) only");
  }
  const bool collective = options.mode == Mode::AllReduce || options.mode == Mode::Tp;
  const std::size_t largest =
      collective ? std::min(options.slice_bytes, options.max_bytes) : options.max_bytes;
  if (props.max_p2p_bytes == 0 || largest > props.max_p2p_bytes) {
    throw BenchError(
        fmt::format("plugin device {} takes at most {} bytes per message "
                    "(maxP2pBytes); lower -e{}",
                    props.name, props.max_p2p_bytes, collective ? " or --slice" : ""));
  }
}

// One member of this rank's virtual NIC and its port's traffic counters when the run began.
struct MemberCounters {
  int dev = 0;
  std::string name;
  std::string dir;  // "" when the port's counters folder was not found
  PortTraffic before;
};

// --vdevice: checks the members exist, reads their port counters, and fuses them with
// makeVDevice. Returns the virtual NIC's device index.
int make_virtual_nic(NetPlugin& plugin, const std::vector<int>& members, int ndev,
                     std::vector<MemberCounters>& counters) {
  const std::string root = sysfs_root_from_env();
  for (const int m : members) {
    if (m >= ndev) {
      throw UsageError(fmt::format(
          "--vdevice {}: device {} does not exist: the plugin has {} device(s) here "
          "(NCCL_IB_HCA={}); the launcher gives each rank as many vroce devices as the "
          "largest index needs, a rank started with --rank needs them in its VROCE_DEVICES",
          vdevice_text(members), m, ndev, env_or("NCCL_IB_HCA", "unset")));
    }
    MemberCounters c;
    c.dev = m;
    c.name = plugin.properties(m).name;
    c.dir = port_counters_dir(root, c.name);
    c.before = read_port_traffic(c.dir);
    counters.push_back(c);
  }
  return plugin.make_vdevice(members);
}

void write_json(const Options& options, const std::string& json) {
  if (options.json_stdout) {
    std::fputs(json.c_str(), stdout);
    std::fflush(stdout);
  }
  if (!options.json_file.empty()) {
    std::ofstream out(options.json_file);
    out << json;
    if (!out) {
      throw BenchError("cannot write --json=" + options.json_file);
    }
  }
  // Tell the launcher the document is out (see kJsonMarkEnv).
  if (const char* mark = std::getenv(kJsonMarkEnv); mark != nullptr && *mark != '\0') {
    std::ofstream(mark).put('1');
  }
}

// The process-wide state a rank sets up first, while it is still single-threaded: the interrupt
// handler, the logger, the plugin's libibverbs and, for --vroce-sysfs in a rank started by hand,
// its own vroce sysfs (returned: it must last the whole run; null when not needed).
std::unique_ptr<OwnVroceSysfs> prepare_rank_process(const Options& options, int rank) {
  // Ctrl-C stops the run at the next size (interrupt.h); a launcher of ours forwards it and
  // kills on the second, a rank on its own dies on the second.
  install_interrupt_handler(std::getenv(kLaunchedEnv) == nullptr);
  install_logger(rank);
  if (!options.ibverbs_path.empty()) {
    // The plugin loads libibverbs from NCCL_IBVERBS_LIB: make it the same library as --raw's.
    setenv("NCCL_IBVERBS_LIB", options.ibverbs_path.c_str(), 1);
  }
  // --vroce-sysfs: the launcher has already put the ranks it starts in their sysfs; a rank
  // started by hand does it itself.
  if (options.vroce_sysfs && std::getenv(kLaunchedEnv) == nullptr) {
    return std::make_unique<OwnVroceSysfs>(own_vroce_devices(), vroce_library(options));
  }
  return nullptr;
}

// The rendezvous socket the launcher (launcher.cpp) hands the rank 0 it starts; -1 when there
// is none, and rank 0 binds the address itself.
int launcher_listen_fd(int rank) {
  const char* fd = std::getenv(kRendezvousFdEnv);
  if (fd == nullptr || rank != 0) {
    return -1;
  }
  const auto parsed = parse_integer<int>(fd);
  if (!parsed || *parsed < 0) {
    throw BenchError(std::string("internal: ") + kRendezvousFdEnv + "='" + fd +
                     "' is not a file descriptor");
  }
  return *parsed;
}

// v11's commId: the same on every rank, as NCCL derives it from the communicator's id.
std::uint64_t agree_on_comm_id(Rendezvous& rendezvous) {
  const auto ids = rendezvous.allgather(std::to_string(random_u64()));
  return std::strtoull(ids[0].c_str(), nullptr, 10);
}

// What the report says about the run before anything is measured.
RunInfo describe_run(const Options& options, const std::vector<std::string>& args) {
  RunInfo info;
  info.version = ROCE_BENCH_VERSION;
  info.date = utc_now();
  info.host = hostname();
  info.command = command_line(args);
  info.mode = options.mode;
  info.api = options.api;
  info.path = options.path;
  info.raw_cts = options.raw_cts;
  info.nranks = options.nranks;
  info.window = options.window;
  info.slice_bytes = options.slice_bytes;
  info.vdevice_members = options.vdevice;
  info.job_source = options.job_source;
  info.verbs_library = verbs_library_in_use(options);
  info.vroce = is_vroce_library(info.verbs_library);
  const std::string load_at_start = load_average();
  info.cpus = fmt::format("{} CPUs, load average {} at start", sysconf(_SC_NPROCESSORS_ONLN),
                          load_at_start);
  return info;
}

// What every measuring mode shares: the options, the rendezvous, the run's description and
// rank 0's table, a row printed as soon as it is measured.
struct RankRun {
  const Options& options;
  Rendezvous& rendezvous;
  RunInfo& info;
  std::FILE* out = nullptr;  // rank 0's tables; null elsewhere and with --json on stdout
  std::optional<TableStream> table;

  // Prints the header and starts the table of the series planned.
  void start_output(const std::vector<Series>& planned) {
    if (out != nullptr) {
      print_header(out, info);
    }
    std::vector<std::string> labels;
    labels.reserve(planned.size());
    for (const auto& s : planned) {
      labels.push_back(s.label);
    }
    table.emplace(out, options.mode, std::move(labels));
    table->begin();
  }

  // Checked before each size, on every rank together, so all stop at the same one.
  bool stop_requested() {
    if (interrupted_anywhere(rendezvous)) {
      info.interrupted = true;
    }
    return info.interrupted;
  }
};

// The plugin as the run uses it; no plugin with --path raw.
struct PluginSetup {
  std::unique_ptr<NetPlugin> plugin;
  NetProperties props;
  Options run_options;  // --vdevice: the virtual NIC's index replaces --dev for the connections
  std::vector<MemberCounters> member_counters;  // --vdevice: this rank's members
};

// Loads and inits the plugin, checks its devices and makes the --vdevice virtual NIC, and adds
// the plugin device to `mine` (this rank's line of the report).
PluginSetup open_plugin(const Options& options, std::uint64_t comm_id, RunInfo& info,
                        std::string& mine) {
  PluginSetup setup{nullptr, {}, options, {}};
  setup.plugin = std::make_unique<NetPlugin>(plugin_path_of(options), options.api);
  NetPlugin& plugin = *setup.plugin;
  plugin.init(roce_bench_nccl_logger, options.traffic_class, comm_id);
  const int ndev = plugin.devices();
  if (ndev <= 0) {
    throw BenchError("plugin " + plugin.name() + " reports " + std::to_string(ndev) +
                     " devices (NCCL_IB_HCA=" + env_or("NCCL_IB_HCA", "unset") +
                     "); NCCL would fall back to another transport");
  }
  if (options.vdevice.empty() && options.dev >= ndev) {
    throw UsageError("--dev " + std::to_string(options.dev) + ": the plugin has " +
                     std::to_string(ndev) + " device(s)");
  }
  if (!options.vdevice.empty()) {
    setup.run_options.dev = make_virtual_nic(plugin, options.vdevice, ndev, setup.member_counters);
    info.vdevice = fmt::format("makeVDevice({}) on every rank: a virtual NIC of {} members",
                               vdevice_text(options.vdevice), options.vdevice.size());
  }
  setup.props = plugin.properties(setup.run_options.dev);
  const NetProperties& props = setup.props;
  check_properties_for_run(props, options);
  if (!options.vdevice.empty() && props.vdev_count != static_cast<int>(options.vdevice.size())) {
    throw BenchError(fmt::format(
        "plugin {} made virtual NIC dev {} ({}) of {} members, but its properties report "
        "vProps.ndevs {}",
        plugin.name(), setup.run_options.dev, props.name, options.vdevice.size(),
        props.vdev_count));
  }
  info.plugin_path = plugin.path();
  info.plugin_name = plugin.name();
  info.plugin_symbol = plugin.symbol();
  mine += fmt::format(", plugin dev {} {} ({} Mb/s, ptrSupport {}, pciPath {})",
                      setup.run_options.dev, props.name, props.speed_mbps,
                      ptr_support_text(props.ptr_support), props.pci_path.value_or("none"));
  if (!setup.member_counters.empty()) {
    std::string members;
    for (const auto& m : setup.member_counters) {
      members += fmt::format("{}dev {} {}", members.empty() ? "" : ", ", m.dev, m.name);
    }
    mine += fmt::format(", virtual NIC of {} members: {}", setup.member_counters.size(), members);
  }
  return setup;
}

// What a rank measured.
struct Measured {
  std::vector<Series> series;
  std::vector<Ratio> ratios;   // --path both: plugin against raw verbs
  std::optional<TpReport> tp;  // --mode tp
  std::size_t steps_planned = 0;
  std::vector<MemberCounters> member_counters;  // --vdevice: this rank's members
};

// --mode tp: the prefill and decode steps over the ring all-reduce, against the link's floor.
TpReport measure_tp(RankRun& run, PluginSetup& setup, const std::string& mine) {
  RingAllReduce allreduce(*setup.plugin, run.rendezvous, setup.run_options, setup.props);
  run.info.registration = allreduce.registration();
  run.info.flush = allreduce.flushes();
  run.info.ranks = run.rendezvous.allgather(mine);
  if (run.out != nullptr) {
    print_header(run.out, run.info);
    std::fflush(run.out);
  }
  const double link_gbps = run.options.link_gbps.value_or(setup.props.speed_mbps / 1000.0);
  if (link_gbps <= 0) {
    throw UsageError("plugin device " + setup.props.name +
                     " reports no port speed: give --link-gbps "
                     "for the floor");
  }
  TpReport tp =
      make_tp_report(run_tp(allreduce, run.rendezvous, run.options), run.options, link_gbps);
  // The decode steps run to the end; a Ctrl-C during them still marks the result.
  run.stop_requested();
  run.rendezvous.barrier();
  return tp;
}

// --mode allreduce: the ring all-reduce, size by size.
void measure_allreduce(RankRun& run, PluginSetup& setup, const std::string& mine,
                       const std::vector<SizeStep>& steps, Progress& progress,
                       std::vector<Series>& series) {
  RingAllReduce allreduce(*setup.plugin, run.rendezvous, setup.run_options, setup.props);
  run.info.registration = allreduce.registration();
  run.info.flush = allreduce.flushes();
  run.info.ranks = run.rendezvous.allgather(mine);
  series.push_back({"plugin", {}});
  run.start_output(series);
  for (const auto& step : steps) {
    if (run.stop_requested()) {
      break;
    }
    series[0].rows.push_back(allreduce.measure(step, 0x1000 + step.bytes));
    run.table->row(0, series[0].rows.back());
    progress.size_done(step.bytes);
  }
  run.rendezvous.barrier();
}

// One size on both paths, alternated in blocks, raw first, so both see the same machine
// conditions even when the load drifts during a size.
void measure_both_paths(RankRun& run, Endpoint& raw, Endpoint& via_plugin, const SizeStep& step,
                        std::vector<Series>& series) {
  P2pMeasurement on_raw(raw, run.rendezvous, run.options, step, 0x2000 + step.bytes);
  P2pMeasurement on_plugin(via_plugin, run.rendezvous, run.options, step, 0x3000 + step.bytes);
  on_raw.warmup();
  on_plugin.warmup();
  const int blocks = std::min(kCompareBlocks, step.iters);
  for (int b = 0; b < blocks; ++b) {
    const int iters = step.iters / blocks + (b < step.iters % blocks ? 1 : 0);
    on_raw.timed(iters);
    on_plugin.timed(iters);
  }
  series[0].rows.push_back(on_raw.finish());
  series[1].rows.push_back(on_plugin.finish());
  run.table->row(0, series[0].rows.back());
  run.table->row(1, series[1].rows.back());
}

// The point-to-point modes (pingpong, bandwidth) on raw verbs, the plugin or both, size by size;
// with both, the plugin's figures as ratios of raw verbs'.
void measure_p2p(RankRun& run, PluginSetup& setup, std::string& mine,
                 const std::vector<SizeStep>& steps, Progress& progress,
                 std::vector<Series>& series, std::vector<Ratio>& ratios) {
  const Options& options = run.options;
  const std::size_t capacity = endpoint_capacity(options.max_bytes, options.window);
  std::unique_ptr<RawEndpoint> raw;
  std::unique_ptr<PluginEndpoint> via_plugin;
  if (options.path != Path::Plugin) {
    raw = std::make_unique<RawEndpoint>(run.rendezvous, options, capacity);
    mine += ", raw " + raw->description();
    series.push_back({options.raw_cts ? "raw verbs + clear-to-send" : "raw verbs", {}});
  }
  if (options.path != Path::Raw) {
    via_plugin = std::make_unique<PluginEndpoint>(*setup.plugin, run.rendezvous, setup.run_options,
                                                  setup.props, capacity);
    run.info.registration = via_plugin->registration();
    run.info.flush = via_plugin->flushes();
    series.push_back({"plugin", {}});
  }
  run.info.ranks = run.rendezvous.allgather(mine);
  run.start_output(series);
  for (const auto& step : steps) {
    if (run.stop_requested()) {
      break;
    }
    if (raw && via_plugin) {
      measure_both_paths(run, *raw, *via_plugin, step, series);
    } else if (raw) {
      series[0].rows.push_back(run_p2p(*raw, run.rendezvous, options, step, 0x2000 + step.bytes));
      run.table->row(0, series[0].rows.back());
    } else {
      series[0].rows.push_back(
          run_p2p(*via_plugin, run.rendezvous, options, step, 0x3000 + step.bytes));
      run.table->row(0, series[0].rows.back());
    }
    progress.size_done(step.bytes);
  }
  run.rendezvous.barrier();
  if (raw && via_plugin) {
    ratios = compare(options.mode, series[1], series[0]);
  }
}

// The plugin's warnings and every rank's call counters, for rank 0's report.
void gather_plugin_calls(NetPlugin& plugin, Rendezvous& rendezvous, RunInfo& info) {
  info.plugin_warnings = logged_warnings();
  const CallCounters mine_calls[2] = {plugin.counters(), plugin.timed_counters()};
  for (const auto& blob : rendezvous.allgather(
           std::string_view(reinterpret_cast<const char*>(mine_calls), sizeof(mine_calls)))) {
    CallCounters c[2]{};
    std::memcpy(c, blob.data(), std::min(blob.size(), sizeof(c)));
    info.plugin_calls.push_back(c[0]);
    info.plugin_timed_calls.push_back(c[1]);
  }
}

// Opens what the run's path needs (the plugin, raw verbs), measures every size in the run's mode
// and gathers the plugin's calls. The comms close before the plugin is finalized and unloaded,
// both before this returns.
Measured measure_rank(RankRun& run, std::uint64_t comm_id) {
  const Options& options = run.options;
  const int rank = *options.rank;
  Measured measured;
  PluginSetup setup{nullptr, {}, options, {}};
  if (options.cuda) {
    auto& cuda = CudaDriver::instance();
    cuda.use_device(options.cuda_device >= 0 ? options.cuda_device : rank % cuda.device_count());
  }
  std::string mine = fmt::format("rank {}: pid {} on {}", rank, getpid(), run.info.host);
  if (options.path != Path::Raw) {
    setup = open_plugin(options, comm_id, run.info, mine);
  }
  run.info.memory = memory_text(options);

  const std::vector<SizeStep> steps = size_sweep(options);
  measured.steps_planned = steps.size();
  Progress progress(rank == 0, steps.size());
  if (options.mode == Mode::Tp) {
    measured.tp = measure_tp(run, setup, mine);
  } else if (options.mode == Mode::AllReduce) {
    measure_allreduce(run, setup, mine, steps, progress, measured.series);
  } else {
    measure_p2p(run, setup, mine, steps, progress, measured.series, measured.ratios);
  }
  if (setup.plugin) {
    gather_plugin_calls(*setup.plugin, run.rendezvous, run.info);
  }
  measured.member_counters = std::move(setup.member_counters);
  return measured;
}

// --vdevice: what each member of every rank's virtual NIC carried, from the port counters.
void gather_member_traffic(const std::vector<MemberCounters>& member_counters, int rank,
                           Rendezvous& rendezvous, RunInfo& info) {
  // Read now that this rank's QPs are gone: vroce writes its counter files exactly then.
  std::vector<MemberTraffic> carried;
  carried.reserve(member_counters.size());
  for (const auto& m : member_counters) {
    carried.push_back({rank, m.name, traffic_delta(m.before, read_port_traffic(m.dir))});
  }
  int r = 0;
  for (const auto& blob : rendezvous.allgather(encode_member_traffic(carried))) {
    auto members = decode_member_traffic(r++, blob);
    info.member_traffic.insert(info.member_traffic.end(), members.begin(), members.end());
  }
  info.member_counters_root = sysfs_root_from_env();
}

// NCCL's profiler events (v10+): every rank checks its own, rank 0 reports them all. Returns the
// first rank's problem ("rank N: ..."), "" when there is none.
std::string gather_profiler_events(Rendezvous& rendezvous, RunInfo& info) {
  std::string profiler_error;
  const ProfilerTally t = profiler_tally();
  const std::string mine = fmt::format("{} {} {} {}|{}", t.starts, t.stops, t.send_starts,
                                       t.recv_starts, profiler_problem(t, profiler_sent_bytes()));
  std::uint64_t starts = 0;
  std::uint64_t stops = 0;
  std::uint64_t sends = 0;
  std::uint64_t recvs = 0;
  int r = 0;
  for (const auto& blob : rendezvous.allgather(mine)) {
    // "starts stops sends recvs[|error]", as this function's `mine` writes it.
    std::istringstream counts(blob);
    std::uint64_t a = 0, b = 0, c = 0, d = 0;
    counts >> a >> b >> c >> d;
    starts += a;
    stops += b;
    sends += c;
    recvs += d;
    const auto bar = blob.find('|');
    if (bar != std::string::npos && bar + 1 < blob.size() && profiler_error.empty()) {
      profiler_error = "rank " + std::to_string(r) + ": " + blob.substr(bar + 1);
    }
    ++r;
  }
  info.profiler_events =
      fmt::format("{} started ({} send, {} recv), {} stopped{}", starts, sends, recvs, stops,
                  profiler_error.empty() ? "" : "; FAILED: " + profiler_error);
  return profiler_error;
}

// Rank 0's report: the tables' end (or the tp report), the footer and the JSON document.
void report_results(RankRun& run, const Measured& measured, std::size_t wrong, bool ok,
                    const std::string& profiler_error) {
  const Options& options = run.options;
  std::FILE* const out = run.out;
  const RunInfo& info = run.info;
  if (measured.tp) {
    if (out != nullptr) {
      print_tp_report(out, *measured.tp);
      if (info.vroce) {
        std::fprintf(out, "# over vroce: %s; the floor above is a real fabric's\n",
                     kVroceFiguresNote);
      }
      print_footer(out, info, 1, 1);
      std::fflush(out);
    }
    write_json(options, render_tp_json(info, *measured.tp));
    return;
  }
  const std::vector<Series>& series = measured.series;
  if (out != nullptr) {
    if (run.table) {
      run.table->finish(options.nranks, series);
    }
    if (!measured.ratios.empty()) {
      print_comparison(out, options.mode, options.raw_cts, measured.ratios);
    }
    print_footer(out, info, series.empty() ? 0 : series[0].rows.size(), measured.steps_planned);
    std::fflush(out);
  }
  write_json(options, render_json(info, series, measured.ratios, wrong, ok, profiler_error));
}

// Rank 0's verdict on stderr: what failed, or that a Ctrl-C cut the run short.
void print_failures(std::size_t wrong, const std::string& profiler_error) {
  if (!profiler_error.empty()) {
    std::fprintf(stderr, "roce-bench: FAILED: NCCL profiler events: %s\n", profiler_error.c_str());
  }
  if (wrong != 0) {
    std::fprintf(stderr,
                 "roce-bench: FAILED: %zu element(s) arrived wrong (see #wrong); the data path "
                 "corrupts, loses or misplaces data\n",
                 wrong);
  }
}

}  // namespace

int run_rank(const Options& options, const std::vector<std::string>& args) {
  const int rank = *options.rank;
  const auto own_sysfs = prepare_rank_process(options, rank);
  Rendezvous rendezvous(rank, options.nranks, options.rendezvous, launcher_listen_fd(rank),
                        options_fingerprint(options), options.timeout_s);
  const std::uint64_t comm_id = agree_on_comm_id(rendezvous);
  RunInfo info = describe_run(options, args);
  // Rank 0's tables, a row as soon as it is measured (nothing with --json on stdout).
  RankRun run{options, rendezvous, info, rank == 0 && !options.json_stdout ? stdout : nullptr, {}};

  const Measured measured = measure_rank(run, comm_id);
  if (!options.vdevice.empty() && options.path != Path::Raw) {
    gather_member_traffic(measured.member_counters, rank, rendezvous, info);
  }
  std::string profiler_error;
  if (options.path != Path::Raw && options.api >= Api::V10) {
    profiler_error = gather_profiler_events(rendezvous, info);
  }
  info.load_at_end = load_average();
  info.cpus += ", " + info.load_at_end + " at end";
  const std::size_t wrong =
      total_wrong(measured.series) + (measured.tp ? measured.tp->run.wrong : 0);
  const bool ok = wrong == 0 && profiler_error.empty();
  if (rank == 0) {
    report_results(run, measured, wrong, ok, profiler_error);
    print_failures(wrong, profiler_error);
  }
  rendezvous.barrier();
  if (!ok) {
    return kExitFailure;
  }
  if (info.interrupted && rank == 0) {
    std::fprintf(stderr,
                 "roce-bench: interrupted (SIGINT); the sizes measured before it are "
                 "printed%s\n",
                 options.json_stdout || !options.json_file.empty()
                     ? " and in the JSON (\"interrupted\": true)"
                     : "");
  }
  return info.interrupted ? kExitInterrupted : kExitOk;
}

namespace {

// --init-check's findings: human-readable lines on `out` and the JSON document, built together.
struct InitCheck {
  std::FILE* out = nullptr;
  tools::JsonWriter json;
  bool passed = true;
  std::vector<std::string> problems;

  void fail(const std::string& why) {
    passed = false;
    problems.push_back(why);
    std::fprintf(out, "FAIL: %s\n", why.c_str());
  }
};

void configure_init_check_logging(const Options& options) {
  install_logger(0);
  // The plugin's banner is logged at INFO; ask for it (our own printing keeps the user's level).
  setenv("NCCL_DEBUG", "INFO", 0);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET,ENV", 0);
  if (!options.ibverbs_path.empty()) {
    setenv("NCCL_IBVERBS_LIB", options.ibverbs_path.c_str(), 1);
  }
}

// The table and the name the plugin answers to.
void check_plugin_name(NetPlugin& plugin, const Options& options, InitCheck& check) {
  // The name after init: a plugin may set it there (NCCL reads it again after init too).
  std::fprintf(check.out, "table: %s, name \"%s\"\n", plugin.symbol().c_str(),
               plugin.name().c_str());
  check.json.key("symbol").value(plugin.symbol());
  check.json.key("name").value(plugin.name());
  if (options.plugin_path.empty() && plugin.name() != "RoCE") {
    // Our own build's plugin must answer to NCCL_NET=RoCE; another plugin (--plugin) is
    // checked for everything else.
    check.fail("the plugin calls itself \"" + plugin.name() + "\", not \"RoCE\": NCCL_NET=RoCE " +
               "would not select it");
  }
}

void print_device_properties(int d, const NetProperties& p, InitCheck& check) {
  std::fprintf(check.out,
               "  dev %d: %s  pciPath %s  guid 0x%016llx  speed %d Mb/s  port %d  ptrSupport %s  "
               "regIsGlobal %d  forceFlush %d  latency %.1f us  maxComms %d  maxRecvs %d  "
               "maxP2pBytes %zu  netDeviceType %d\n",
               d, p.name.c_str(), p.pci_path ? p.pci_path->c_str() : "(none)",
               static_cast<unsigned long long>(p.guid), p.speed_mbps, p.port,
               ptr_support_text(p.ptr_support).c_str(), p.reg_is_global, p.force_flush,
               static_cast<double>(p.latency_us), p.max_comms, p.max_recvs, p.max_p2p_bytes,
               p.net_device_type);
  tools::JsonWriter& json = check.json;
  json.begin_object();
  json.key("dev").value(d);
  json.key("name").value(p.name);
  if (p.pci_path) {
    json.key("pci_path").value(*p.pci_path);
  } else {
    json.key("pci_path").null();
  }
  json.key("guid").value(static_cast<std::uint64_t>(p.guid));
  json.key("speed_mbps").value(p.speed_mbps);
  json.key("port").value(p.port);
  json.key("ptr_support").value(ptr_support_text(p.ptr_support));
  json.key("reg_is_global").value(p.reg_is_global);
  json.key("force_flush").value(p.force_flush);
  json.key("latency_us").value(static_cast<double>(p.latency_us));
  json.key("max_comms").value(p.max_comms);
  json.key("max_recvs").value(p.max_recvs);
  json.key("max_p2p_bytes").value(static_cast<std::uint64_t>(p.max_p2p_bytes));
  json.key("max_coll_bytes").value(static_cast<std::uint64_t>(p.max_coll_bytes));
  json.key("net_device_type").value(p.net_device_type);
  json.end_object();
}

// The properties NCCL's core relies on (see the ABI reference, section 5). `names`: the names
// of the devices before this one.
void check_device_properties(int d, const NetProperties& p, const std::vector<std::string>& names,
                             InitCheck& check) {
  if (p.name.empty()) {
    check.fail("dev " + std::to_string(d) + " has no name (NCCL keys its topology on it)");
  }
  for (const auto& n : names) {
    if (n == p.name) {
      check.fail("dev " + std::to_string(d) + " repeats the name " + p.name);
    }
  }
  if (p.max_p2p_bytes == 0 || p.max_p2p_bytes > NCCL_MAX_NET_SIZE_BYTES) {
    check.fail("dev " + std::to_string(d) + " maxP2pBytes " + std::to_string(p.max_p2p_bytes) +
               " is outside (0, 1 TiB]: NCCL's proxy setup would fail");
  }
  if ((p.ptr_support & NCCL_PTR_HOST) == 0) {
    check.fail("dev " + std::to_string(d) + " does not take host memory (ptrSupport " +
               ptr_support_text(p.ptr_support) + ")");
  }
  if (p.net_device_type != NCCL_NET_DEVICE_HOST) {
    check.fail("dev " + std::to_string(d) + " netDeviceType " + std::to_string(p.net_device_type) +
               " is not HOST");
  }
}

// Lists and checks every device. Returns the device count.
int check_devices(NetPlugin& plugin, InitCheck& check) {
  const int ndev = plugin.devices();
  std::fprintf(check.out, "devices: %d\n", ndev);
  check.json.key("devices").begin_array();
  std::vector<std::string> names;
  for (int d = 0; d < ndev; ++d) {
    const NetProperties p = plugin.properties(d);
    print_device_properties(d, p, check);
    check_device_properties(d, p, names, check);
    names.push_back(p.name);
  }
  check.json.end_array();
  if (ndev <= 0) {
    check.fail("the plugin reports no device (NCCL would move on to another transport)");
  }
  return ndev;
}

// The INFO and WARN lines the plugin logged during init.
void print_banner(InitCheck& check) {
  std::fprintf(check.out, "plugin banner (its init log):\n");
  check.json.key("banner").begin_array();
  for (const auto& record : logged_records()) {
    if (record.level == NCCL_LOG_INFO || record.level == NCCL_LOG_WARN) {
      std::fprintf(check.out, "  %s %s\n", record.level == NCCL_LOG_WARN ? "WARN" : "INFO",
                   record.text.c_str());
      check.json.value(record.text);
    }
  }
  check.json.end_array();
}

// Posts one receive and one send between the pair and tests both until done. Returns the size
// the receive reported.
int move_one_message(NetPlugin& plugin, const PluginComms& comms, Buffer& send_buf, void* smh,
                     Buffer& recv_buf, void* rmh, std::size_t bytes, double timeout_s) {
  Poller poller(timeout_s, 0, nullptr, PollPolicy::Yield);
  void* rreq = nullptr;
  void* sreq = nullptr;
  while (rreq == nullptr) {
    rreq = plugin.irecv(comms.recv_comm, recv_buf.data(), bytes, 0, rmh, true);
    if (rreq == nullptr) {
      poller.idle("loopback irecv");
    }
  }
  bool rdone = false;
  bool sdone = false;
  int rsize = -1;
  while (!rdone || !sdone) {
    if (sreq == nullptr) {
      sreq = plugin.isend(comms.send_comm, send_buf.data(), bytes, 0, smh);
    }
    bool advanced = false;
    if (sreq != nullptr && !sdone && plugin.test(sreq, nullptr)) {
      sdone = advanced = true;
    }
    if (!rdone && plugin.test(rreq, &rsize)) {
      rdone = advanced = true;
    }
    if (!advanced) {
      poller.idle("loopback message");
    }
  }
  return rsize;
}

// NCCL's GDR probe pattern: connect to our own listen comm, alternating connect and accept on
// this one thread, then move one message through the pair and check every word of it.
void check_loopback(NetPlugin& plugin, const Options& options, InitCheck& check) {
  const NetProperties props = plugin.properties(options.dev);
  PluginComms comms = connect_loopback(plugin, options.dev, options.timeout_s);
  constexpr std::size_t kBytes = 4096;
  Buffer send_buf = Buffer::host(kBytes);
  Buffer recv_buf = Buffer::host(kBytes);
  std::string how;
  void* smh = register_buffer(plugin, comms.send_comm, send_buf, props, options.dmabuf, &how);
  void* rmh = register_buffer(plugin, comms.recv_comm, recv_buf, props, options.dmabuf, &how);
  std::vector<std::uint32_t> words(kBytes / 4);
  fill_message(words, 42);
  send_buf.write(0, words.data(), kBytes);
  const int rsize =
      move_one_message(plugin, comms, send_buf, smh, recv_buf, rmh, kBytes, options.timeout_s);
  recv_buf.read(0, words.data(), kBytes);
  const std::size_t wrong = count_message_errors(words, 42);
  plugin.dereg_mr(comms.send_comm, smh);
  plugin.dereg_mr(comms.recv_comm, rmh);
  close_comms(plugin, comms);
  std::fprintf(check.out,
               "loopback: dev %d connect+accept on one thread: %d connect and %d accept "
               "calls; %zu-byte message: %d bytes reported, %zu wrong words\n",
               options.dev, comms.connect_calls, comms.accept_calls, kBytes, rsize, wrong);
  tools::JsonWriter& json = check.json;
  json.key("loopback").begin_object();
  json.key("connect_calls").value(comms.connect_calls);
  json.key("accept_calls").value(comms.accept_calls);
  json.key("bytes_reported").value(rsize);
  json.key("wrong_words").value(static_cast<std::uint64_t>(wrong));
  json.end_object();
  if (wrong != 0 || rsize != static_cast<int>(kBytes)) {
    check.fail("the loopback message arrived damaged");
  }
}

// Loads and inits the plugin and runs every check on it. Returns whether the plugin loaded (a
// missing plugin is not a missing NIC).
bool check_plugin(const Options& options, const std::string& path, InitCheck& check) {
  bool plugin_loaded = false;
  try {
    NetPlugin plugin(path, options.api);
    plugin_loaded = true;
    plugin.init(roce_bench_nccl_logger, options.traffic_class, random_u64());
    check_plugin_name(plugin, options, check);
    const int ndev = check_devices(plugin, check);
    print_banner(check);
    if (ndev > 0 && options.dev < ndev) {
      check_loopback(plugin, options, check);
    } else if (ndev > 0) {
      check.fail("--dev " + std::to_string(options.dev) + " is not below the device count " +
                 std::to_string(ndev));
    }
    plugin.finalize();
  } catch (const BenchError& e) {
    check.fail(e.what());
  }
  return plugin_loaded;
}

// The problems, vroce's hint when the plugin loaded but failed, and the verdict.
void finish_init_check(const Options& options, bool plugin_loaded, InitCheck& check) {
  tools::JsonWriter& json = check.json;
  json.key("problems").begin_array();
  for (const auto& p : check.problems) {
    json.value(p);
  }
  json.end_array();
  if (!check.passed && plugin_loaded) {
    if (auto hint = vroce_init_check_hint(options)) {
      std::fputs(hint->c_str(), check.out);
      json.key("hint").value(*hint);
    }
  }
  json.key("status").value(check.passed ? "pass" : "fail");
  json.end_object();
  std::fprintf(check.out, "init-check: %s\n", check.passed ? "PASS" : "FAIL");
  std::fflush(check.out);
}

}  // namespace

int run_init_check(const Options& options) {
  configure_init_check_logging(options);
  InitCheck check;
  // With --json on stdout the human-readable lines go to stderr.
  check.out = options.json_stdout ? stderr : stdout;
  check.json.begin_object();
  check.json.key("tool").value("roce-bench --init-check");
  const std::string path = plugin_path_of(options);
  std::fprintf(check.out, "plugin: %s\n", path.c_str());
  check.json.key("plugin").value(path);
  const bool plugin_loaded = check_plugin(options, path, check);
  finish_init_check(options, plugin_loaded, check);
  write_json(options, check.json.str() + "\n");
  return check.passed ? kExitOk : kExitFailure;
}

}  // namespace roce::bench
