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

}  // namespace

int run_rank(const Options& options, const std::vector<std::string>& args) {
  const int rank = *options.rank;
  const int nranks = options.nranks;
  // Ctrl-C stops the run at the next size (interrupt.h); a launcher of ours forwards it and
  // kills on the second, a rank on its own dies on the second.
  install_interrupt_handler(std::getenv(kLaunchedEnv) == nullptr);
  install_logger(rank);
  if (!options.ibverbs_path.empty()) {
    // The plugin loads libibverbs from NCCL_IBVERBS_LIB: make it the same library as --raw's.
    setenv("NCCL_IBVERBS_LIB", options.ibverbs_path.c_str(), 1);
  }
  // --vroce-sysfs: the launcher has already put the ranks it starts in their sysfs; a rank
  // started by hand does it itself, while it is still single-threaded.
  std::optional<OwnVroceSysfs> own_sysfs;
  if (options.vroce_sysfs && std::getenv(kLaunchedEnv) == nullptr) {
    own_sysfs.emplace(own_vroce_devices(), vroce_library(options));
  }

  int listen_fd = -1;
  if (const char* fd = std::getenv(kRendezvousFdEnv); fd != nullptr && rank == 0) {
    // Set by the launcher (launcher.cpp) for the rank it started with the listening socket.
    const auto parsed = parse_integer<int>(fd);
    if (!parsed || *parsed < 0) {
      throw BenchError(std::string("internal: ") + kRendezvousFdEnv + "='" + fd +
                       "' is not a file descriptor");
    }
    listen_fd = *parsed;
  }
  Rendezvous rendezvous(rank, nranks, options.rendezvous, listen_fd, options_fingerprint(options),
                        options.timeout_s);
  // v11's commId: the same on every rank, as NCCL derives it from the communicator's id.
  const auto ids = rendezvous.allgather(std::to_string(random_u64()));
  const std::uint64_t comm_id = std::strtoull(ids[0].c_str(), nullptr, 10);

  RunInfo info;
  info.version = ROCE_BENCH_VERSION;
  info.date = utc_now();
  info.host = hostname();
  info.command = command_line(args);
  info.mode = options.mode;
  info.api = options.api;
  info.path = options.path;
  info.raw_cts = options.raw_cts;
  info.nranks = nranks;
  info.window = options.window;
  info.slice_bytes = options.slice_bytes;
  info.vdevice_members = options.vdevice;
  info.job_source = options.job_source;
  info.verbs_library = verbs_library_in_use(options);
  info.vroce = is_vroce_library(info.verbs_library);
  const std::string load_at_start = load_average();
  info.cpus = fmt::format("{} CPUs, load average {} at start", sysconf(_SC_NPROCESSORS_ONLN),
                          load_at_start);
  // Rank 0's tables, a row as soon as it is measured (nothing with --json on stdout).
  std::FILE* const out = rank == 0 && !options.json_stdout ? stdout : nullptr;
  std::optional<TableStream> table;
  auto start_output = [&](const std::vector<Series>& planned) {
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
  };
  // Checked before each size, on every rank together, so all stop at the same one.
  auto stop_requested = [&] {
    if (interrupted_anywhere(rendezvous)) {
      info.interrupted = true;
    }
    return info.interrupted;
  };

  std::vector<MemberCounters> member_counters;  // --vdevice: this rank's members
  std::vector<Series> series;
  std::vector<Ratio> ratios;
  std::optional<TpReport> tp;
  std::size_t steps_planned = 0;
  std::string error;
  bool ok = true;
  {
    std::unique_ptr<NetPlugin> plugin;
    NetProperties props;
    // --vdevice: the virtual NIC's index replaces --dev for the connections.
    Options run_options = options;
    if (options.cuda) {
      auto& cuda = CudaDriver::instance();
      cuda.use_device(options.cuda_device >= 0 ? options.cuda_device : rank % cuda.device_count());
    }
    std::string mine = fmt::format("rank {}: pid {} on {}", rank, getpid(), info.host);
    if (options.path != Path::Raw) {
      plugin = std::make_unique<NetPlugin>(plugin_path_of(options), options.api);
      plugin->init(roce_bench_nccl_logger, options.traffic_class, comm_id);
      const int ndev = plugin->devices();
      if (ndev <= 0) {
        throw BenchError("plugin " + plugin->name() + " reports " + std::to_string(ndev) +
                         " devices (NCCL_IB_HCA=" + env_or("NCCL_IB_HCA", "unset") +
                         "); NCCL would fall back to another transport");
      }
      if (options.vdevice.empty() && options.dev >= ndev) {
        throw UsageError("--dev " + std::to_string(options.dev) + ": the plugin has " +
                         std::to_string(ndev) + " device(s)");
      }
      if (!options.vdevice.empty()) {
        run_options.dev = make_virtual_nic(*plugin, options.vdevice, ndev, member_counters);
        info.vdevice = fmt::format("makeVDevice({}) on every rank: a virtual NIC of {} members",
                                   vdevice_text(options.vdevice), options.vdevice.size());
      }
      props = plugin->properties(run_options.dev);
      check_properties_for_run(props, options);
      if (!options.vdevice.empty() &&
          props.vdev_count != static_cast<int>(options.vdevice.size())) {
        throw BenchError(fmt::format(
            "plugin {} made virtual NIC dev {} ({}) of {} members, but its properties report "
            "vProps.ndevs {}",
            plugin->name(), run_options.dev, props.name, options.vdevice.size(), props.vdev_count));
      }
      info.plugin_path = plugin->path();
      info.plugin_name = plugin->name();
      info.plugin_symbol = plugin->symbol();
      mine += fmt::format(", plugin dev {} {} ({} Mb/s, ptrSupport {}, pciPath {})",
                          run_options.dev, props.name, props.speed_mbps,
                          ptr_support_text(props.ptr_support), props.pci_path.value_or("none"));
      if (!member_counters.empty()) {
        std::string members;
        for (const auto& m : member_counters) {
          members += fmt::format("{}dev {} {}", members.empty() ? "" : ", ", m.dev, m.name);
        }
        mine += fmt::format(", virtual NIC of {} members: {}", member_counters.size(), members);
      }
    }
    info.memory = memory_text(options);

    const std::vector<SizeStep> steps = size_sweep(options);
    steps_planned = steps.size();
    Progress progress(rank == 0, steps.size());
    if (options.mode == Mode::Tp) {
      RingAllReduce allreduce(*plugin, rendezvous, run_options, props);
      info.registration = allreduce.registration();
      info.flush = allreduce.flushes();
      info.ranks = rendezvous.allgather(mine);
      if (out != nullptr) {
        print_header(out, info);
        std::fflush(out);
      }
      const double link_gbps = options.link_gbps.value_or(props.speed_mbps / 1000.0);
      if (link_gbps <= 0) {
        throw UsageError("plugin device " + props.name +
                         " reports no port speed: give --link-gbps "
                         "for the floor");
      }
      tp = make_tp_report(run_tp(allreduce, rendezvous, options), options, link_gbps);
      // The decode steps run to the end; a Ctrl-C during them still marks the result.
      stop_requested();
      rendezvous.barrier();
    } else if (options.mode == Mode::AllReduce) {
      RingAllReduce allreduce(*plugin, rendezvous, run_options, props);
      info.registration = allreduce.registration();
      info.flush = allreduce.flushes();
      info.ranks = rendezvous.allgather(mine);
      series.push_back({"plugin", {}});
      start_output(series);
      for (const auto& step : steps) {
        if (stop_requested()) {
          break;
        }
        series[0].rows.push_back(allreduce.measure(step, 0x1000 + step.bytes));
        table->row(0, series[0].rows.back());
        progress.size_done(step.bytes);
      }
      rendezvous.barrier();
    } else {
      const std::size_t capacity = endpoint_capacity(options.max_bytes, options.window);
      std::unique_ptr<RawEndpoint> raw;
      std::unique_ptr<PluginEndpoint> via_plugin;
      if (options.path != Path::Plugin) {
        raw = std::make_unique<RawEndpoint>(rendezvous, options, capacity);
        mine += ", raw " + raw->description();
        series.push_back({options.raw_cts ? "raw verbs + clear-to-send" : "raw verbs", {}});
      }
      if (options.path != Path::Raw) {
        via_plugin =
            std::make_unique<PluginEndpoint>(*plugin, rendezvous, run_options, props, capacity);
        info.registration = via_plugin->registration();
        info.flush = via_plugin->flushes();
        series.push_back({"plugin", {}});
      }
      info.ranks = rendezvous.allgather(mine);
      start_output(series);
      for (const auto& step : steps) {
        if (stop_requested()) {
          break;
        }
        if (raw && via_plugin) {
          // Alternated in blocks, raw first, so both paths see the same machine conditions
          // even when the load drifts during a size.
          P2pMeasurement on_raw(*raw, rendezvous, options, step, 0x2000 + step.bytes);
          P2pMeasurement on_plugin(*via_plugin, rendezvous, options, step, 0x3000 + step.bytes);
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
          table->row(0, series[0].rows.back());
          table->row(1, series[1].rows.back());
        } else if (raw) {
          series[0].rows.push_back(run_p2p(*raw, rendezvous, options, step, 0x2000 + step.bytes));
          table->row(0, series[0].rows.back());
        } else {
          series[0].rows.push_back(
              run_p2p(*via_plugin, rendezvous, options, step, 0x3000 + step.bytes));
          table->row(0, series[0].rows.back());
        }
        progress.size_done(step.bytes);
      }
      rendezvous.barrier();
      if (raw && via_plugin) {
        ratios = compare(options.mode, series[1], series[0]);
      }
    }
    if (plugin) {
      info.plugin_warnings = logged_warnings();
      const CallCounters mine_calls[2] = {plugin->counters(), plugin->timed_counters()};
      for (const auto& blob : rendezvous.allgather(
               std::string_view(reinterpret_cast<const char*>(mine_calls), sizeof(mine_calls)))) {
        CallCounters c[2]{};
        std::memcpy(c, blob.data(), std::min(blob.size(), sizeof(c)));
        info.plugin_calls.push_back(c[0]);
        info.plugin_timed_calls.push_back(c[1]);
      }
    }
    // Comms close here, before the plugin is finalized and unloaded.
  }
  if (!options.vdevice.empty() && options.path != Path::Raw) {
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

  // NCCL's profiler events (v10+): every rank checks its own, rank 0 reports them all.
  std::string profiler_error;
  if (options.path != Path::Raw && options.api >= Api::V10) {
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
  }
  info.load_at_end = load_average();
  info.cpus += ", " + info.load_at_end + " at end";
  const std::size_t wrong = total_wrong(series) + (tp ? tp->run.wrong : 0);
  ok = wrong == 0 && profiler_error.empty();
  if (rank == 0 && tp) {
    if (out != nullptr) {
      print_tp_report(out, *tp);
      if (info.vroce) {
        std::fprintf(out, "# over vroce: %s; the floor above is a real fabric's\n",
                     kVroceFiguresNote);
      }
      print_footer(out, info, 1, 1);
      std::fflush(out);
    }
    write_json(options, render_tp_json(info, *tp));
  } else if (rank == 0) {
    if (out != nullptr) {
      if (table) {
        table->finish(nranks, series);
      }
      if (!ratios.empty()) {
        print_comparison(out, options.mode, options.raw_cts, ratios);
      }
      print_footer(out, info, series.empty() ? 0 : series[0].rows.size(), steps_planned);
      std::fflush(out);
    }
    write_json(options, render_json(info, series, ratios, wrong, ok,
                                    error.empty() ? profiler_error : error));
  }
  if (rank == 0) {
    if (!profiler_error.empty()) {
      std::fprintf(stderr, "roce-bench: FAILED: NCCL profiler events: %s\n",
                   profiler_error.c_str());
    }
    if (wrong != 0) {
      std::fprintf(stderr,
                   "roce-bench: FAILED: %zu element(s) arrived wrong (see #wrong); the data path "
                   "corrupts, loses or misplaces data\n",
                   wrong);
    }
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

int run_init_check(const Options& options) {
  const auto filter = parse_log_filter(std::getenv("NCCL_DEBUG"), std::getenv("NCCL_DEBUG_SUBSYS"));
  if (!filter) {
    throw UsageError(filter.error());
  }
  configure_logger(*filter, 0);
  // The plugin's banner is logged at INFO; ask for it (our own printing keeps the user's level).
  setenv("NCCL_DEBUG", "INFO", 0);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET,ENV", 0);
  if (!options.ibverbs_path.empty()) {
    setenv("NCCL_IBVERBS_LIB", options.ibverbs_path.c_str(), 1);
  }

  // With --json on stdout the human-readable lines go to stderr.
  std::FILE* out = options.json_stdout ? stderr : stdout;
  tools::JsonWriter json;
  json.begin_object();
  json.key("tool").value("roce-bench --init-check");
  bool passed = true;
  std::vector<std::string> problems;
  auto fail = [&](const std::string& why) {
    passed = false;
    problems.push_back(why);
    std::fprintf(out, "FAIL: %s\n", why.c_str());
  };

  const std::string path = plugin_path_of(options);
  std::fprintf(out, "plugin: %s\n", path.c_str());
  json.key("plugin").value(path);
  bool plugin_loaded = false;  // a missing plugin is not a missing NIC
  try {
    NetPlugin plugin(path, options.api);
    plugin_loaded = true;
    plugin.init(roce_bench_nccl_logger, options.traffic_class, random_u64());
    // The name after init: a plugin may set it there (NCCL reads it again after init too).
    std::fprintf(out, "table: %s, name \"%s\"\n", plugin.symbol().c_str(), plugin.name().c_str());
    json.key("symbol").value(plugin.symbol());
    json.key("name").value(plugin.name());
    if (options.plugin_path.empty() && plugin.name() != "RoCE") {
      // Our own build's plugin must answer to NCCL_NET=RoCE; another plugin (--plugin) is
      // checked for everything else.
      fail("the plugin calls itself \"" + plugin.name() + "\", not \"RoCE\": NCCL_NET=RoCE " +
           "would not select it");
    }
    const int ndev = plugin.devices();
    std::fprintf(out, "devices: %d\n", ndev);
    json.key("devices").begin_array();
    std::vector<std::string> names;
    for (int d = 0; d < ndev; ++d) {
      const NetProperties p = plugin.properties(d);
      std::fprintf(
          out,
          "  dev %d: %s  pciPath %s  guid 0x%016llx  speed %d Mb/s  port %d  ptrSupport %s  "
          "regIsGlobal %d  forceFlush %d  latency %.1f us  maxComms %d  maxRecvs %d  "
          "maxP2pBytes %zu  netDeviceType %d\n",
          d, p.name.c_str(), p.pci_path ? p.pci_path->c_str() : "(none)",
          static_cast<unsigned long long>(p.guid), p.speed_mbps, p.port,
          ptr_support_text(p.ptr_support).c_str(), p.reg_is_global, p.force_flush,
          static_cast<double>(p.latency_us), p.max_comms, p.max_recvs, p.max_p2p_bytes,
          p.net_device_type);
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
      // The properties NCCL's core relies on (see the ABI reference, section 5).
      if (p.name.empty()) {
        fail("dev " + std::to_string(d) + " has no name (NCCL keys its topology on it)");
      }
      for (const auto& n : names) {
        if (n == p.name) {
          fail("dev " + std::to_string(d) + " repeats the name " + p.name);
        }
      }
      names.push_back(p.name);
      if (p.max_p2p_bytes == 0 || p.max_p2p_bytes > NCCL_MAX_NET_SIZE_BYTES) {
        fail("dev " + std::to_string(d) + " maxP2pBytes " + std::to_string(p.max_p2p_bytes) +
             " is outside (0, 1 TiB]: NCCL's proxy setup would fail");
      }
      if ((p.ptr_support & NCCL_PTR_HOST) == 0) {
        fail("dev " + std::to_string(d) + " does not take host memory (ptrSupport " +
             ptr_support_text(p.ptr_support) + ")");
      }
      if (p.net_device_type != NCCL_NET_DEVICE_HOST) {
        fail("dev " + std::to_string(d) + " netDeviceType " + std::to_string(p.net_device_type) +
             " is not HOST");
      }
    }
    json.end_array();
    if (ndev <= 0) {
      fail("the plugin reports no device (NCCL would move on to another transport)");
    }

    std::fprintf(out, "plugin banner (its init log):\n");
    json.key("banner").begin_array();
    for (const auto& record : logged_records()) {
      if (record.level == NCCL_LOG_INFO || record.level == NCCL_LOG_WARN) {
        std::fprintf(out, "  %s %s\n", record.level == NCCL_LOG_WARN ? "WARN" : "INFO",
                     record.text.c_str());
        json.value(record.text);
      }
    }
    json.end_array();

    if (ndev > 0 && options.dev < ndev) {
      // NCCL's GDR probe pattern: connect to our own listen comm, alternating connect and accept
      // on this one thread, then move one message through the pair.
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
      Poller poller(options.timeout_s, 0, nullptr, PollPolicy::Yield);
      void* rreq = nullptr;
      void* sreq = nullptr;
      while (rreq == nullptr) {
        rreq = plugin.irecv(comms.recv_comm, recv_buf.data(), kBytes, 0, rmh, true);
        if (rreq == nullptr) {
          poller.idle("loopback irecv");
        }
      }
      bool rdone = false;
      bool sdone = false;
      int rsize = -1;
      while (!rdone || !sdone) {
        if (sreq == nullptr) {
          sreq = plugin.isend(comms.send_comm, send_buf.data(), kBytes, 0, smh);
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
      recv_buf.read(0, words.data(), kBytes);
      const std::size_t wrong = count_message_errors(words, 42);
      plugin.dereg_mr(comms.send_comm, smh);
      plugin.dereg_mr(comms.recv_comm, rmh);
      close_comms(plugin, comms);
      std::fprintf(out,
                   "loopback: dev %d connect+accept on one thread: %d connect and %d accept "
                   "calls; %zu-byte message: %d bytes reported, %zu wrong words\n",
                   options.dev, comms.connect_calls, comms.accept_calls, kBytes, rsize, wrong);
      json.key("loopback").begin_object();
      json.key("connect_calls").value(comms.connect_calls);
      json.key("accept_calls").value(comms.accept_calls);
      json.key("bytes_reported").value(rsize);
      json.key("wrong_words").value(static_cast<std::uint64_t>(wrong));
      json.end_object();
      if (wrong != 0 || rsize != static_cast<int>(kBytes)) {
        fail("the loopback message arrived damaged");
      }
    } else if (ndev > 0) {
      fail("--dev " + std::to_string(options.dev) + " is not below the device count " +
           std::to_string(ndev));
    }
    plugin.finalize();
  } catch (const BenchError& e) {
    fail(e.what());
  }
  json.key("problems").begin_array();
  for (const auto& p : problems) {
    json.value(p);
  }
  json.end_array();
  if (!passed && plugin_loaded) {
    if (auto hint = vroce_init_check_hint(options)) {
      std::fputs(hint->c_str(), out);
      json.key("hint").value(*hint);
    }
  }
  json.key("status").value(passed ? "pass" : "fail");
  json.end_object();
  std::fprintf(out, "init-check: %s\n", passed ? "PASS" : "FAIL");
  std::fflush(out);
  write_json(options, json.str() + "\n");
  return passed ? kExitOk : kExitFailure;
}

}  // namespace roce::bench
