// --mode tp: one decoded token's all-reduces through the plugin. Each decode step runs the
// 2 x layers all-reduces of a (batch x hidden) tensor back to back, as a tensor-parallel model
// does between its layers (without the compute); --steps tokens are timed after the warm-up
// steps, then one more step has every element of every all-reduce verified. The result is read
// as the per-token figure beside the ring floor (tp_model.h) and the latency budget.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "options.h"
#include "report.h"
#include "stats.h"
#include "tp_model.h"

namespace roce::bench {

class RingAllReduce;
class Rendezvous;

struct TpRun {
  TpShape shape;
  std::string model;  // display name
  int steps = 0;
  int warmup_steps = 0;
  std::vector<double> token_us;      // per timed step: the slowest rank's time
  std::vector<double> allreduce_us;  // per timed all-reduce: the slowest rank's time
  std::uint64_t wrong = 0;           // elements, over the verified step and every rank
  int verified_allreduces = 0;
};

// Collective: every rank calls it with the same options. The result is complete on every rank.
TpRun run_tp(RingAllReduce& allreduce, Rendezvous& rendezvous, const Options& options);

// Everything the report prints, derived from a run, the options and the link speed.
struct TpReport {
  TpRun run;
  Percentiles token_us;
  Percentiles allreduce_us;
  double link_gbps = 0;
  double hop_latency_us = 0;
  AllReduceFloor floor;  // per all-reduce
  double budget_ms = 0;
  std::optional<double> compute_ms;
  std::optional<double> claim_us;
  std::optional<std::string> claim_verdict;  // set when the claim is below the floor
  std::string per_token;                     // per_token_line()
};
TpReport make_tp_report(const TpRun& run, const Options& options, double link_gbps);

void print_tp_report(std::FILE* out, const TpReport& report);
std::string render_tp_json(const RunInfo& info, const TpReport& report);

}  // namespace roce::bench
