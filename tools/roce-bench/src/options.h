// roce-bench's command line: every option, its default and its validation, parsed into one
// immutable Options value. Pure (no I/O), so the argument errors are unit-tested.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dtype.h"
#include "net_table.h"

namespace roce::bench {

// Tp: the all-reduces of tensor-parallel decoding, per token (tp_model.h, tp_mode.h).
enum class Mode { PingPong, Bandwidth, BiBandwidth, AllReduce, Tp };
// The ncclNet table version to drive (tools/common/net_table.h).
using Api = tools::NetApi;
// What carries the messages: the plugin (default), raw verbs (--raw) or both (--compare-raw).
enum class Path { Plugin, Raw, Both };
// iflush: as NCCL decides (auto), after every received message (always), or never.
enum class FlushPolicy { Auto, Always, Never };
enum class DmabufPolicy { Auto, On, Off };
// What a rank does after a run of polls that found nothing (see poller.h).
enum class PollPolicy { Spin, Yield, Sleep };

// The whole of `text` as a decimal T, or nullopt (empty, not a number, trailing characters, out
// of T's range).
template <typename T>
std::optional<T> parse_integer(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) {
    return std::nullopt;
  }
  return value;
}

inline constexpr int kMaxWindow = 32;  // NCCL_NET_MAX_REQUESTS
inline constexpr int kMaxRanks = 64;
// v8 takes int sizes and NCCL's v8 shim rejects more than 1 GiB.
inline constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 30;
// makeVDevice's member limit: NCCL_NET_MAX_DEVS_PER_NIC of the v9..v11 tables, and v12's.
inline constexpr int kMaxVDeviceMembersV9 = 4;
inline constexpr int kMaxVDeviceMembersV12 = 8;

struct Options {
  Mode mode = Mode::AllReduce;
  Api api = Api::V8;
  Path path = Path::Plugin;

  // Ranks: started here (launcher) unless --rank is given (cluster mode).
  int nranks = 2;
  bool nranks_given = false;  // --nranks or --tp on the command line
  std::optional<int> rank;
  // Set when rank and size came from a launcher's environment (job_env.h): where from.
  std::string job_source;
  std::string rendezvous;  // host:port; launcher default 127.0.0.1:0 (ephemeral port)

  std::string plugin_path;   // empty: found next to the executable
  std::string ibverbs_path;  // empty: NCCL_IBVERBS_LIB, else vroce next to the executable

  // Sizes and iterations (nccl-tests' -b/-e/-f/-n/-w).
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 0;  // 0 until resolved: the mode's default
  std::size_t step_factor = 2;
  std::optional<int> iters;
  std::optional<int> warmup;

  int window = 8;                          // outstanding requests per comm (NCCL_STEPS)
  std::size_t slice_bytes = 512UL * 1024;  // all-reduce pipeline step (NCCL's SIMPLE step)
  int traffic_class = -1;                  // NCCL_NET_TRAFFIC_CLASS_UNDEF
  int dev = 0;                             // plugin device index
  // --vdevice: the plugin devices each rank fuses with makeVDevice (v9+) into one virtual NIC,
  // whose index then replaces --dev. Empty: no virtual NIC.
  std::vector<int> vdevice;
  std::string hca;     // raw verbs device; empty: from NCCL_IB_HCA
  int gid_index = -1;  // raw verbs GID; -1: first RoCE v2 IPv4 GID
  // --raw-cts: the raw path's sender waits for a clear-to-send per message, as the plugin's and
  // NCCL's IB transport's do: the floor of their protocol rather than of verbs.
  bool raw_cts = false;

  // The all-reduce's element type (allreduce: fp32 unless --dtype; tp: fp16 unless --dtype).
  DType dtype = DType::F32;

  // --mode tp: a model's decode step (preset --model, or --layers and --hidden), --batch rows,
  // --steps decode steps, and what the result is compared with.
  std::string model;  // preset name; empty with explicit --layers/--hidden
  int layers = 0;
  int hidden = 0;
  int batch = 16;
  int steps = 10;
  double budget_ms = 15;
  std::optional<double> compute_ms;
  std::optional<double> link_gbps;  // empty: the plugin device's port speed
  double nic_latency_us = 1.0;      // per ring hop, for the floor
  std::optional<double> claim_us;   // a per-all-reduce figure to hold against the floor
  bool list_models = false;

  bool cuda = false;
  int cuda_device = -1;  // -1: rank modulo the number of GPUs
  DmabufPolicy dmabuf = DmabufPolicy::Auto;
  FlushPolicy flush = FlushPolicy::Auto;

  bool json_stdout = false;
  std::string json_file;
  double timeout_s = 60;  // without progress, a run is declared hung
  PollPolicy poll = PollPolicy::Yield;
  int poll_sleep_us = 0;  // measurement aid: sleep between empty polls
  bool init_check = false;
  bool vroce_sysfs = false;  // launcher: each rank sees vroce's fake sysfs as /sys/class
  bool inject_corruption = false;
  bool help = false;
  bool version = false;
};

// Parses argv[1..]. Throws UsageError naming the option, the value and what is accepted.
Options parse_options(std::span<const std::string> args);

struct JobEnv;
// Without --rank: the rank, size and rendezvous of a job that torchrun, Open MPI or Slurm
// started (job_env.h), merged into `options`. --nranks, when given, must match the job's size;
// --rendezvous wins over MASTER_ADDR/MASTER_PORT. Throws UsageError.
Options with_job(const Options& options, const JobEnv& job);

// The --help text.
std::string usage_text();

// A stable digest of every option that all ranks must share, so rank 0 can refuse a rank
// started with different options.
std::uint64_t options_fingerprint(const Options& options);

std::string_view mode_name(Mode mode);
std::string_view api_name(Api api);
std::string_view path_name(Path path);

// "0,1" -> {0, 1}: --vdevice's list of plugin device indexes. Throws UsageError.
std::vector<int> parse_vdevice(const std::string& text);

// "0,1": a --vdevice list as given.
std::string vdevice_text(const std::vector<int>& members);

// Parses "8", "64K", "4M", "1G" (binary multiples). nullopt on anything else.
std::optional<std::size_t> parse_bytes(std::string_view text);

}  // namespace roce::bench
