// Command-line parsing and validation for roce-bench.
#include "options.h"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "errors.h"
#include "job_env.h"
#include "tp_model.h"

namespace roce::bench {
namespace {

std::optional<double> parse_double(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) {
    return std::nullopt;
  }
  return value;
}

// Walks argv, handing out option names and their values ("--x=v", "--x v", "-x v").
class ArgCursor {
 public:
  explicit ArgCursor(std::span<const std::string> args) : args_(args) {}

  bool done() const { return index_ >= args_.size(); }

  // Returns the next option name, splitting "--name=value".
  std::string next_name() {
    std::string arg = args_[index_++];
    inline_value_.reset();
    if (arg.rfind("--", 0) == 0) {
      const auto eq = arg.find('=');
      if (eq != std::string::npos) {
        inline_value_ = arg.substr(eq + 1);
        arg.resize(eq);
      }
    }
    return arg;
  }

  bool has_inline_value() const { return inline_value_.has_value(); }

  std::string value(const std::string& name) {
    if (inline_value_) {
      std::string v = *inline_value_;
      inline_value_.reset();
      return v;
    }
    if (done()) {
      throw UsageError(name + " needs a value");
    }
    return args_[index_++];
  }

  void reject_inline_value(const std::string& name) const {
    if (inline_value_) {
      throw UsageError(name + " takes no value (got '" + *inline_value_ + "')");
    }
  }

 private:
  std::span<const std::string> args_;
  std::size_t index_ = 0;
  std::optional<std::string> inline_value_;
};

std::string fmt_range(const std::string& name, const std::string& text, double min, double max) {
  auto shown = [](double v) {
    std::string t = std::to_string(v);
    t.erase(t.find_last_not_of('0') + 1);
    if (!t.empty() && t.back() == '.') {
      t.pop_back();
    }
    return t;
  };
  return name + " " + text + ": expected a number in [" + shown(min) + ", " + shown(max) + "]";
}

int int_value(ArgCursor& cursor, const std::string& name, int min, int max) {
  const std::string text = cursor.value(name);
  const auto value = parse_integer<int>(text);
  if (!value || *value < min || *value > max) {
    throw UsageError(name + " " + text + ": expected an integer in " + std::to_string(min) + ".." +
                     std::to_string(max));
  }
  return *value;
}

double double_value(ArgCursor& cursor, const std::string& name, double min, double max) {
  const std::string text = cursor.value(name);
  const auto value = parse_double(text);
  if (!value || !(*value >= min && *value <= max)) {
    throw UsageError(fmt_range(name, text, min, max));
  }
  return *value;
}

std::size_t bytes_value(ArgCursor& cursor, const std::string& name) {
  const std::string text = cursor.value(name);
  const auto value = parse_bytes(text);
  if (!value) {
    throw UsageError(name + " " + text + ": expected a byte count such as 8, 64K, 4M or 1G");
  }
  return *value;
}

Mode mode_value(const std::string& text) {
  if (text == "pingpong" || text == "latency") {
    return Mode::PingPong;
  }
  if (text == "bw" || text == "bandwidth") {
    return Mode::Bandwidth;
  }
  if (text == "bibw" || text == "bidir") {
    return Mode::BiBandwidth;
  }
  if (text == "allreduce") {
    return Mode::AllReduce;
  }
  if (text == "tp") {
    return Mode::Tp;
  }
  throw UsageError("--mode " + text + ": expected pingpong, bw, bibw, allreduce or tp");
}

Api api_value(const std::string& text) {
  // "v12" or "12", as the table is named in the plugin (ncclNetPlugin_v12).
  if (const auto api = tools::parse_net_api(text.starts_with('v') ? text : "v" + text)) {
    return *api;
  }
  throw UsageError("--api " + text + ": expected v6, v7, v8, v9, v10, v11 or v12 (the ncclNet " +
                   "versions the plugin exports)");
}

void validate_rendezvous(const std::string& text, bool need_port) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw UsageError("--rendezvous " + text + ": expected host:port, e.g. 10.0.0.1:29500");
  }
  const auto port = parse_integer<int>(std::string_view(text).substr(colon + 1));
  if (!port || *port < 0 || *port > 65535 || (need_port && *port == 0)) {
    throw UsageError("--rendezvous " + text + ": the port must be in " +
                     (need_port ? "1..65535 (every rank must know it)" : "0..65535"));
  }
}

// --mode tp: the shape from the preset or the explicit sizes; the all-reduce size from it.
void validate_tp(Options& o, bool sizes_given, bool dtype_given) {
  if (sizes_given) {
    throw UsageError(
        "-b/-e do not apply to --mode tp: the all-reduce size is --batch x --hidden "
        "x the --dtype's size");
  }
  if (o.path != Path::Plugin) {
    throw UsageError(
        "--mode tp runs through the plugin only; --raw and --compare-raw measure "
        "pingpong, bw and bibw");
  }
  if (!dtype_given) {
    o.dtype = DType::F16;
  }
  if (!o.model.empty()) {
    const ModelPreset* preset = find_model(o.model);
    if (preset == nullptr) {
      throw UsageError("--model " + o.model + ": expected one of " + model_names() +
                       " (or give --layers and --hidden instead)");
    }
    o.layers = o.layers != 0 ? o.layers : preset->layers;
    o.hidden = o.hidden != 0 ? o.hidden : preset->hidden;
  } else if (o.layers == 0 && o.hidden == 0) {
    o.model = "llama3-70b";
    o.layers = find_model(o.model)->layers;
    o.hidden = find_model(o.model)->hidden;
  } else if (o.layers == 0 || o.hidden == 0) {
    throw UsageError("--mode tp without --model needs both --layers and --hidden");
  }
  const std::size_t bytes =
      static_cast<std::size_t>(o.batch) * static_cast<std::size_t>(o.hidden) * dtype_bytes(o.dtype);
  if (bytes > kMaxMessageBytes) {
    throw UsageError("--batch " + std::to_string(o.batch) + " x --hidden " +
                     std::to_string(o.hidden) + " is " + std::to_string(bytes) +
                     " bytes per all-reduce: at most 1G");
  }
  o.min_bytes = bytes;
  o.max_bytes = bytes;
}

// --vdevice: a virtual NIC needs makeVDevice (ncclNet v9+), the plugin path, and at most as
// many members as the table's makeVDevice takes.
void validate_vdevice(const Options& o, bool dev_given) {
  if (o.vdevice.empty()) {
    return;
  }
  const std::string given = "--vdevice " + vdevice_text(o.vdevice);
  if (o.api < Api::V9) {
    throw UsageError(given + ": --api " + std::string(api_name(o.api)) +
                     " has no makeVDevice (ncclNet v9 and later have it); add --api v9, v10, " +
                     "v11 or v12");
  }
  const int limit = o.api >= Api::V12 ? kMaxVDeviceMembersV12 : kMaxVDeviceMembersV9;
  if (static_cast<int>(o.vdevice.size()) > limit) {
    throw UsageError(given + ": " + std::to_string(o.vdevice.size()) + " members, but the " +
                     std::string(api_name(o.api)) + " table's makeVDevice takes at most " +
                     std::to_string(limit) + (limit < kMaxVDeviceMembersV12 ? " (v12: 8)" : ""));
  }
  if (dev_given) {
    throw UsageError(given + " and --dev both pick the device: the virtual NIC's index is " +
                     "what makeVDevice returns; drop --dev");
  }
  if (o.path != Path::Plugin) {
    throw UsageError(given + " fuses plugin devices; --raw and --compare-raw run on one verbs " +
                     "device (--hca)");
  }
  if (o.init_check) {
    throw UsageError(given + " applies to runs, not to --init-check");
  }
}

void validate(Options& o, bool nranks_given, bool sizes_given, bool dtype_given, bool dev_given) {
  if (o.help || o.version || o.list_models) {
    return;
  }
  if (o.mode == Mode::Tp) {
    validate_tp(o, sizes_given, dtype_given);
  }
  if (dtype_given && o.mode != Mode::AllReduce && o.mode != Mode::Tp) {
    throw UsageError("--dtype applies to --mode allreduce and tp (pingpong and bw move bytes)");
  }
  if (o.max_bytes == 0) {
    o.max_bytes = o.mode == Mode::PingPong ? (std::size_t{1} << 20) : (std::size_t{64} << 20);
    if (o.min_bytes > o.max_bytes) {
      o.max_bytes = o.min_bytes;
    }
  }
  if (o.min_bytes < 4 && o.mode != Mode::Tp) {
    throw UsageError("-b " + std::to_string(o.min_bytes) +
                     ": the smallest message is one float (4 bytes)");
  }
  if (o.min_bytes > o.max_bytes) {
    throw UsageError("-b " + std::to_string(o.min_bytes) + " is larger than -e " +
                     std::to_string(o.max_bytes));
  }
  if (o.max_bytes > kMaxMessageBytes) {
    throw UsageError("-e " + std::to_string(o.max_bytes) +
                     ": at most 1G (ncclNet v8 takes int sizes; NCCL splits larger transfers)");
  }
  if (o.slice_bytes < 4 || o.slice_bytes % 4 != 0) {
    throw UsageError("--slice " + std::to_string(o.slice_bytes) +
                     ": must be a positive multiple of 4 bytes");
  }
  const bool collective = o.mode == Mode::AllReduce || o.mode == Mode::Tp;
  if (!collective && nranks_given && o.nranks != 2) {
    throw UsageError(std::string("--mode ") + std::string(mode_name(o.mode)) +
                     " runs between exactly 2 ranks (got --nranks " + std::to_string(o.nranks) +
                     "); use --mode allreduce or tp for more");
  }
  if (o.path != Path::Plugin && o.mode == Mode::AllReduce) {
    throw UsageError(std::string(o.path == Path::Raw ? "--raw" : "--compare-raw") +
                     " measures pingpong, bw and bibw (the raw-verbs floor); the ring " +
                     "all-reduce runs through the plugin only: add --mode pingpong|bw|bibw");
  }
  if (o.raw_cts && o.path == Path::Plugin) {
    throw UsageError("--raw-cts changes the raw-verbs path; add --raw or --compare-raw");
  }
  if (o.init_check && o.path != Path::Plugin) {
    throw UsageError("--init-check checks the plugin; it cannot be combined with --raw");
  }
  if (o.rank) {
    if (!nranks_given) {
      throw UsageError("--rank needs --nranks (the size of the job)");
    }
    if (*o.rank >= o.nranks) {
      throw UsageError("--rank " + std::to_string(*o.rank) + " is not below --nranks " +
                       std::to_string(o.nranks));
    }
    if (o.rendezvous.empty()) {
      throw UsageError("--rank needs --rendezvous host:port (rank 0 listens there)");
    }
    validate_rendezvous(o.rendezvous, true);
  } else if (!o.rendezvous.empty()) {
    validate_rendezvous(o.rendezvous, false);
  }
  if (o.timeout_s <= 0) {
    throw UsageError("--timeout must be a positive number of seconds");
  }
  validate_vdevice(o, dev_given);
}

}  // namespace

std::vector<int> parse_vdevice(const std::string& text) {
  const std::string expected =
      ": expected 2 to 8 distinct plugin device indexes separated by commas, e.g. 0,1";
  std::vector<int> members;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = std::string_view(text).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto dev = parse_integer<int>(item);
    if (!dev || *dev < 0 || *dev > 1023) {
      throw UsageError("--vdevice " + text + expected);
    }
    for (const int m : members) {
      if (m == *dev) {
        throw UsageError("--vdevice " + text + ": device " + std::to_string(m) + " is named twice" +
                         expected);
      }
    }
    members.push_back(*dev);
    if (comma == std::string::npos) {
      break;
    }
    start = comma + 1;
  }
  if (members.size() < 2 || members.size() > static_cast<std::size_t>(kMaxVDeviceMembersV12)) {
    throw UsageError("--vdevice " + text + ": " + std::to_string(members.size()) + " member(s)" +
                     expected);
  }
  return members;
}

std::string vdevice_text(const std::vector<int>& members) {
  std::string text;
  for (const int m : members) {
    text += (text.empty() ? "" : ",") + std::to_string(m);
  }
  return text;
}

std::optional<std::size_t> parse_bytes(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  std::size_t multiplier = 1;
  std::string_view digits = text;
  switch (text.back()) {
    case 'k':
    case 'K':
      multiplier = std::size_t{1} << 10;
      break;
    case 'm':
    case 'M':
      multiplier = std::size_t{1} << 20;
      break;
    case 'g':
    case 'G':
      multiplier = std::size_t{1} << 30;
      break;
    default:
      break;
  }
  if (multiplier != 1) {
    digits.remove_suffix(1);
  }
  const auto value = parse_integer<std::size_t>(digits);
  if (!value || *value > std::numeric_limits<std::size_t>::max() / multiplier) {
    return std::nullopt;
  }
  return *value * multiplier;
}

Options parse_options(std::span<const std::string> args) {
  Options o;
  bool nranks_given = false;
  bool sizes_given = false;
  bool dtype_given = false;
  bool dev_given = false;
  ArgCursor cursor(args);
  while (!cursor.done()) {
    const std::string name = cursor.next_name();
    if (name == "-h" || name == "--help") {
      o.help = true;
    } else if (name == "--version") {
      o.version = true;
    } else if (name == "-m" || name == "--mode") {
      o.mode = mode_value(cursor.value(name));
    } else if (name == "--api") {
      o.api = api_value(cursor.value(name));
    } else if (name == "--raw") {
      cursor.reject_inline_value(name);
      o.path = Path::Raw;
    } else if (name == "--compare-raw") {
      cursor.reject_inline_value(name);
      o.path = Path::Both;
    } else if (name == "--raw-cts") {
      cursor.reject_inline_value(name);
      o.raw_cts = true;
    } else if (name == "--nranks" || name == "--tp") {
      o.nranks = int_value(cursor, name, 2, kMaxRanks);
      nranks_given = true;
      o.nranks_given = true;
    } else if (name == "--rank") {
      o.rank = int_value(cursor, name, 0, kMaxRanks - 1);
    } else if (name == "--rendezvous") {
      o.rendezvous = cursor.value(name);
    } else if (name == "--plugin") {
      o.plugin_path = cursor.value(name);
    } else if (name == "--ibverbs") {
      o.ibverbs_path = cursor.value(name);
    } else if (name == "-b" || name == "--minbytes") {
      o.min_bytes = bytes_value(cursor, name);
      sizes_given = true;
    } else if (name == "-e" || name == "--maxbytes") {
      o.max_bytes = bytes_value(cursor, name);
      sizes_given = true;
    } else if (name == "--dtype") {
      const std::string v = cursor.value(name);
      const auto type = parse_dtype(v);
      if (!type) {
        throw UsageError("--dtype " + v + ": expected fp16, bf16 or fp32");
      }
      o.dtype = *type;
      dtype_given = true;
    } else if (name == "--model") {
      o.model = cursor.value(name);
    } else if (name == "--layers") {
      o.layers = int_value(cursor, name, 1, 1024);
    } else if (name == "--hidden") {
      o.hidden = int_value(cursor, name, 1, 1 << 20);
    } else if (name == "--batch") {
      o.batch = int_value(cursor, name, 1, 1 << 16);
    } else if (name == "--steps") {
      o.steps = int_value(cursor, name, 1, 1'000'000);
    } else if (name == "--budget-ms") {
      o.budget_ms = double_value(cursor, name, 0.001, 1e6);
    } else if (name == "--compute-ms") {
      o.compute_ms = double_value(cursor, name, 0, 1e6);
    } else if (name == "--link-gbps") {
      o.link_gbps = double_value(cursor, name, 0.001, 1e5);
    } else if (name == "--nic-latency-us") {
      o.nic_latency_us = double_value(cursor, name, 0, 1e6);
    } else if (name == "--claim-us") {
      o.claim_us = double_value(cursor, name, 0, 1e9);
    } else if (name == "--list-models") {
      cursor.reject_inline_value(name);
      o.list_models = true;
    } else if (name == "-f" || name == "--stepfactor") {
      o.step_factor = static_cast<std::size_t>(int_value(cursor, name, 2, 1024));
    } else if (name == "-n" || name == "--iters") {
      o.iters = int_value(cursor, name, 1, 10'000'000);
    } else if (name == "-w" || name == "--warmup") {
      o.warmup = int_value(cursor, name, 0, 10'000'000);
    } else if (name == "--window") {
      o.window = int_value(cursor, name, 1, kMaxWindow);
    } else if (name == "--slice") {
      o.slice_bytes = bytes_value(cursor, name);
    } else if (name == "--tc") {
      o.traffic_class = int_value(cursor, name, -1, 255);
    } else if (name == "--dev") {
      o.dev = int_value(cursor, name, 0, 1023);
      dev_given = true;
    } else if (name == "--vdevice") {
      o.vdevice = parse_vdevice(cursor.value(name));
    } else if (name == "--hca") {
      o.hca = cursor.value(name);
    } else if (name == "--gid-index") {
      o.gid_index = int_value(cursor, name, -1, 65535);
    } else if (name == "--cuda") {
      cursor.reject_inline_value(name);
      o.cuda = true;
    } else if (name == "--cuda-device") {
      o.cuda_device = int_value(cursor, name, -1, 1023);
    } else if (name == "--dmabuf") {
      const std::string v = cursor.value(name);
      if (v == "auto") {
        o.dmabuf = DmabufPolicy::Auto;
      } else if (v == "on") {
        o.dmabuf = DmabufPolicy::On;
      } else if (v == "off") {
        o.dmabuf = DmabufPolicy::Off;
      } else {
        throw UsageError("--dmabuf " + v + ": expected auto, on or off");
      }
    } else if (name == "--flush") {
      const std::string v = cursor.value(name);
      if (v == "auto") {
        o.flush = FlushPolicy::Auto;
      } else if (v == "always") {
        o.flush = FlushPolicy::Always;
      } else if (v == "never") {
        o.flush = FlushPolicy::Never;
      } else {
        throw UsageError("--flush " + v + ": expected auto, always or never");
      }
    } else if (name == "--json") {
      if (cursor.has_inline_value()) {
        o.json_file = cursor.value(name);
        if (o.json_file.empty()) {
          throw UsageError("--json= needs a file name (or use --json alone for stdout)");
        }
      } else {
        o.json_stdout = true;
      }
    } else if (name == "--timeout") {
      const std::string text = cursor.value(name);
      const auto value = parse_double(text);
      if (!value || *value <= 0 || *value > 86400) {
        throw UsageError("--timeout " + text + ": expected seconds in (0, 86400]");
      }
      o.timeout_s = *value;
    } else if (name == "--poll") {
      const std::string v = cursor.value(name);
      if (v == "spin") {
        o.poll = PollPolicy::Spin;
      } else if (v == "yield") {
        o.poll = PollPolicy::Yield;
      } else if (v == "sleep") {
        o.poll = PollPolicy::Sleep;
      } else {
        throw UsageError("--poll " + v + ": expected spin, yield or sleep");
      }
    } else if (name == "--poll-sleep-us") {
      o.poll_sleep_us = int_value(cursor, name, 0, 1'000'000);
    } else if (name == "--vroce-sysfs") {
      cursor.reject_inline_value(name);
      o.vroce_sysfs = true;
    } else if (name == "--init-check") {
      cursor.reject_inline_value(name);
      o.init_check = true;
    } else if (name == "--inject-corruption") {
      cursor.reject_inline_value(name);
      o.inject_corruption = true;
    } else {
      throw UsageError("unknown option '" + name + "'");
    }
  }
  validate(o, nranks_given, sizes_given, dtype_given, dev_given);
  return o;
}

Options with_job(const Options& options, const JobEnv& job) {
  Options o = options;
  if (o.nranks_given && o.nranks != job.size) {
    throw UsageError("--nranks " + std::to_string(o.nranks) + " disagrees with the job size " +
                     std::to_string(job.size) + " from " + job.source +
                     ": drop --nranks, or pass --rank to run outside the job");
  }
  if (job.size < 2 || job.size > kMaxRanks) {
    throw UsageError("the job size " + std::to_string(job.size) + " from " + job.source +
                     " is outside 2.." + std::to_string(kMaxRanks));
  }
  const bool collective = o.mode == Mode::AllReduce || o.mode == Mode::Tp;
  if (!collective && job.size != 2) {
    throw UsageError(std::string("--mode ") + std::string(mode_name(o.mode)) +
                     " runs between exactly 2 ranks, but " + job.source + " says the job has " +
                     std::to_string(job.size) + "; use --mode allreduce or tp for more");
  }
  if (o.rendezvous.empty()) {
    if (job.rendezvous.empty()) {
      throw UsageError("rank " + std::to_string(job.rank) + " of " + std::to_string(job.size) +
                       " from " + job.source + " needs rank 0's address: pass --rendezvous " +
                       "HOST:PORT, or set MASTER_ADDR and MASTER_PORT");
    }
    o.rendezvous = job.rendezvous;
  }
  validate_rendezvous(o.rendezvous, true);
  o.rank = job.rank;
  o.nranks = job.size;
  o.job_source = job.source;
  return o;
}

std::string_view mode_name(Mode mode) {
  switch (mode) {
    case Mode::PingPong:
      return "pingpong";
    case Mode::Bandwidth:
      return "bw";
    case Mode::BiBandwidth:
      return "bibw";
    case Mode::AllReduce:
      return "allreduce";
    case Mode::Tp:
      return "tp";
  }
  return "?";
}

std::string_view api_name(Api api) {
  // A view of a string that lives as long as the program: the symbol minus its prefix.
  const std::string_view symbol = tools::net_table_symbol(api);
  return symbol.substr(symbol.rfind('_') + 1);
}

std::string_view path_name(Path path) {
  switch (path) {
    case Path::Plugin:
      return "plugin";
    case Path::Raw:
      return "raw";
    case Path::Both:
      return "plugin+raw";
  }
  return "?";
}

std::uint64_t options_fingerprint(const Options& o) {
  // FNV-1a over a canonical rendering of the shared options. Paths are left out: ranks on
  // different hosts may install the plugin in different places.
  std::string canonical;
  auto add = [&canonical](const std::string& part) {
    canonical += part;
    canonical += ';';
  };
  add(std::string(mode_name(o.mode)));
  add(std::string(api_name(o.api)));
  add(std::string(path_name(o.path)));
  add(o.raw_cts ? "raw-cts" : "raw-write");
  add(std::to_string(o.nranks));
  add(std::to_string(o.min_bytes));
  add(std::to_string(o.max_bytes));
  add(std::to_string(o.step_factor));
  add(o.iters ? std::to_string(*o.iters) : "auto");
  add(o.warmup ? std::to_string(*o.warmup) : "auto");
  add(std::to_string(o.window));
  add(std::to_string(o.slice_bytes));
  add(std::to_string(o.traffic_class));
  add(o.cuda ? "cuda" : "host");
  add(std::to_string(static_cast<int>(o.flush)));
  add(std::to_string(static_cast<int>(o.poll)));
  add(std::to_string(o.poll_sleep_us));
  add(std::string(dtype_name(o.dtype)));
  add(std::to_string(o.layers));
  add(std::to_string(o.hidden));
  add(std::to_string(o.batch));
  add(std::to_string(o.steps));
  // Both ends of a connection on a virtual NIC must have as many members (the plugin refuses
  // the connection otherwise); the indexes themselves are each host's own.
  add("vdevice" + std::to_string(o.vdevice.size()));
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : canonical) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string usage_text() {
  return R"(usage: roce-bench [options]

Drives the RoCE NCCL net plugin through its exported ncclNet table exactly as NCCL does, and
measures it. By default it starts --nranks ranks on this machine, each on its own vroce device.

Modes (-m, --mode):
  allreduce          ring all-reduce (reduce-scatter + all-gather), float sum, every element
                     verified (default; sizes 8 B..64 MiB)
  pingpong           isend/irecv round trips between 2 ranks: median, p90, p99 (8 B..1 MiB)
  bw | bibw          uni-/bidirectional bandwidth with a window of outstanding requests
                     (8 B..64 MiB)
  tp                 tensor-parallel decoding: per decoded token, the 2 all-reduces per layer
                     of a (batch x hidden) tensor, --steps tokens; per-token and per-all-reduce
                     p50/p90/p99, the ring floor beside them, the share of --budget-ms

Paths:
  --raw              the same pingpong/bw/bibw directly on verbs (RC QP, RDMA WRITE WITH IMM),
                     without the plugin: the floor to compare with
  --compare-raw      both, interleaved size by size, with the plugin/raw ratios
  --raw-cts          the raw path as the plugin's protocol: each receive writes a clear-to-send
                     (address, size, rkey) into the sender's ring, and the sender writes only
                     once it has read it; the floor of that protocol rather than of verbs

Plugin:
  --plugin PATH      libnccl-net-roce.so (default: next to this executable's build tree)
  --api v6..v12      the ncclNetPlugin_vN table to drive (default v8)
  --dev N            plugin device index (default 0)
  --vdevice LIST     fuse these plugin devices (2..8 indexes, e.g. 0,1) with makeVDevice into
                     one virtual NIC on every rank and run on it instead of --dev (needs --api
                     v9..v12; v9..v11 take 4 members). The launcher gives each rank as many
                     vroce devices as the largest index needs, as the functions of one PCI
                     device (a dual-port NIC), and prints each member's port counters
  --tc N             traffic class: v10 connect / v11 init config, and raw QPs (default unset)
  --init-check       load and init the plugin, list its devices and properties, connect a
                     loopback pair on one thread (NCCL's GDR-probe pattern); exit 0 or 1

Ranks:
  --nranks N         ranks to start here (default 2; pingpong/bw/bibw need exactly 2)
  --rank R --nranks N --rendezvous HOST:PORT
                     cluster mode: this process is rank R; rank 0 listens on HOST:PORT.
                     No vroce setup is applied (real NICs, NCCL_IB_HCA as set).
                     Without --rank, a process that torchrun, mpirun or srun started takes
                     its rank and size from RANK/WORLD_SIZE (torchrun), else
                     OMPI_COMM_WORLD_RANK/SIZE (Open MPI), else SLURM_PROCID/SLURM_NTASKS
                     (Slurm); rank 0 listens on --rendezvous, else MASTER_ADDR:MASTER_PORT
                     (torchrun: MASTER_PORT+1, as torchrun's own store holds MASTER_PORT).
                     A size of 1 starts the ranks here, as without those variables.
  --rendezvous HOST:PORT  (launcher) where rank 0 listens (default 127.0.0.1:0)
  --ibverbs PATH     libibverbs for the ranks (NCCL_IBVERBS_LIB; default: vroce of this build)
  --vroce-sysfs      each rank sees vroce's fake sysfs as /sys/class, in a private mount
                     namespace (root; for plugins that read sysfs, like NCCL's IB transport
                     built as a plugin); a rank started with --rank writes its own tree, from
                     VROCE_DEVICES

Tensor parallelism (--mode tp; --nranks, or --tp, is the TP degree):
  --model NAME       preset: llama3-8b, llama3-70b (default), llama3-405b, mixtral-8x7b,
                     mixtral-8x22b, qwen2-72b (--list-models prints their shapes)
  --layers N --hidden N  an explicit shape (either one also overrides the preset's)
  --batch N          rows of the all-reduced activation (default 16; 16 x 8192 fp16 = 256 KiB)
  --dtype fp16|bf16|fp32  element type (tp default fp16; allreduce default fp32)
  --steps N          decode steps (tokens) timed (default 10), after -w warm-up steps (default 1)
  --budget-ms MS     the per-token latency budget to compare with (default 15)
  --compute-ms MS    the model's compute per token: prints compute + communication
  --link-gbps G      link speed for the floor (default: the plugin device's port speed)
  --nic-latency-us U per-hop latency for the floor (default 1.0)
  --claim-us U       a per-all-reduce figure to hold against the floor
  --list-models      print the presets and exit

Sizes and iterations (as nccl-tests):
  -b, --minbytes N   smallest size (default 8); K, M, G suffixes are binary multiples
  -e, --maxbytes N   largest size (default per mode)
  -f, --stepfactor F multiply the size by F (default 2)
  -n, --iters N      timed iterations per size (default: scaled with the size)
  -w, --warmup N     untimed iterations per size (default: scaled with the size)
  --window W         outstanding requests per comm, 1..32 (default 8, NCCL_STEPS)
  --slice N          all-reduce pipeline step in bytes (default 512K)

Memory:
  --cuda             buffers in GPU memory (CUDA driver API loaded at run time)
  --cuda-device N    GPU to use (default: rank modulo the number of GPUs)
  --dmabuf auto|on|off   register GPU buffers through regMrDmaBuf (auto: as NCCL decides)
  --flush auto|always|never  iflush after GPU receives (auto: as NCCL decides)

Raw verbs:
  --hca NAME         device (default: from NCCL_IB_HCA, else the first active port)
  --gid-index N      GID (default: NCCL_IB_GID_INDEX, else the first RoCE v2 IPv4 GID)

Output and control:
  --json             JSON on stdout instead of the tables
  --json=FILE        the tables on stdout and JSON into FILE
  --timeout S        fail a run that makes no progress for S seconds (default 60)
  --poll spin|yield|sleep  after 64 polls that find nothing: keep spinning, sched_yield
                     (default), or yield then take 20 us naps (more ranks than cores)
  --poll-sleep-us N  sleep N us between polls that find nothing (instruction counting)
  --inject-corruption  test aid: flip one received element to prove the verifier fails the run
  -h, --help, --version

Environment: NCCL_DEBUG (WARN default here, INFO, TRACE, NONE), NCCL_DEBUG_SUBSYS, VROCE_DEVICES
(the device list the launched ranks take entries from), NCCL_IB_* as for NCCL; the job
variables above (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, OMPI_COMM_WORLD_RANK/SIZE,
SLURM_PROCID, SLURM_NTASKS).
Ctrl-C (SIGINT) stops at the end of the size being measured: the rows printed so far stay, and
--json holds them with "interrupted": true and status "interrupted". A second Ctrl-C kills.
Exit status: 0 success, 1 failure (wrong data, plugin or verbs error, lost rank), 2 usage error,
130 interrupted.
)";
}

}  // namespace roce::bench
