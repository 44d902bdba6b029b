// roce-bench: drives the RoCE NCCL net plugin through its exported ncclNet table like NCCL does,
// on host or GPU memory, and measures pingpong, bandwidth and a ring all-reduce against the
// raw-verbs floor. See --help and docs/benchmarks.md.
#include <cstdio>
#include <string>
#include <vector>

#include "errors.h"
#include "job_env.h"
#include "launcher.h"
#include "options.h"
#include "run.h"
#include "tp_model.h"

#ifndef ROCE_BENCH_VERSION
#define ROCE_BENCH_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  using namespace roce::bench;
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::string who = "roce-bench";
  try {
    const Options options = parse_options(args);
    if (options.help) {
      std::fputs(usage_text().c_str(), stdout);
      return kExitOk;
    }
    if (options.version) {
      std::printf("roce-bench %s\n", ROCE_BENCH_VERSION);
      return kExitOk;
    }
    if (options.list_models) {
      std::printf("%-16s %-16s %7s %7s\n", "model", "name", "layers", "hidden");
      for (const auto& m : model_presets()) {
        std::printf("%-16.*s %-16.*s %7d %7d\n", static_cast<int>(m.name.size()), m.name.data(),
                    static_cast<int>(m.display.size()), m.display.data(), m.layers, m.hidden);
      }
      return kExitOk;
    }
    if (options.init_check) {
      return run_init_check(options);
    }
    Options job_options = options;
    if (!options.rank) {
      // Started by torchrun, mpirun or srun: that launcher's rank and size (job_env.h).
      const auto job = job_from_environment(process_environment(), kMaxRanks);
      if (!job) {
        throw UsageError(job.error());
      }
      if (*job) {
        job_options = with_job(options, **job);
      }
    }
    if (job_options.rank) {
      who = "roce-bench: rank " + std::to_string(*job_options.rank);
      return run_rank(job_options, args);
    }
    return launch_ranks(options, args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s (see roce-bench --help)\n", who.c_str(), e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", who.c_str(), e.what());
    return kExitFailure;
  }
}
