// Tensor-parallel decode steps through the plugin, and their report.
#include "tp_mode.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "allreduce.h"
#include "json_writer.h"
#include "rendezvous.h"

namespace roce::bench {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

// Element-wise maximum over every rank's vector (all of the same length): what the slowest
// rank saw, step by step.
std::vector<double> slowest_rank(Rendezvous& rendezvous, const std::vector<double>& mine) {
  const auto all = rendezvous.allgather(
      std::string_view(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(double)));
  std::vector<double> slowest(mine.size(), 0.0);
  for (const auto& blob : all) {
    std::vector<double> theirs(mine.size(), 0.0);
    std::memcpy(theirs.data(), blob.data(), std::min(blob.size(), theirs.size() * sizeof(double)));
    for (std::size_t i = 0; i < slowest.size(); ++i) {
      slowest[i] = std::max(slowest[i], theirs[i]);
    }
  }
  return slowest;
}

void print_line(std::FILE* out, const std::string& text) {
  std::fputs(text.c_str(), out);
  std::fputc('\n', out);
}

}  // namespace

TpRun run_tp(RingAllReduce& allreduce, Rendezvous& rendezvous, const Options& options) {
  TpRun run;
  run.shape = {options.layers, options.hidden, options.batch, options.dtype, options.nranks};
  run.model = model_display(options.model, options.layers, options.hidden);
  run.steps = options.steps;
  run.warmup_steps = options.warmup.value_or(1);
  const int per_step = run.shape.allreduces_per_token();
  const std::size_t count = run.shape.allreduce_bytes() / dtype_bytes(options.dtype);

  allreduce.prepare(count, 0x7e57);
  for (int s = 0; s < run.warmup_steps; ++s) {
    for (int a = 0; a < per_step; ++a) {
      allreduce.run(count);
    }
  }
  rendezvous.barrier();

  std::vector<double> token_us;
  std::vector<double> allreduce_us;
  token_us.reserve(static_cast<std::size_t>(run.steps));
  allreduce_us.reserve(static_cast<std::size_t>(run.steps) * static_cast<std::size_t>(per_step));
  for (int s = 0; s < run.steps; ++s) {
    const auto step_start = Clock::now();
    auto before = step_start;
    for (int a = 0; a < per_step; ++a) {
      allreduce.run(count);
      const auto after = Clock::now();
      allreduce_us.push_back(elapsed_us(before, after));
      before = after;
    }
    token_us.push_back(elapsed_us(step_start, before));
  }
  run.token_us = slowest_rank(rendezvous, token_us);
  run.allreduce_us = slowest_rank(rendezvous, allreduce_us);

  // The verified step: fresh inputs for every all-reduce, checked element by element. A peer's
  // data cannot land before this rank's irecv inside run(), so preparing without a barrier is
  // safe.
  std::uint64_t wrong = 0;
  allreduce.arm_corruption();
  for (int a = 0; a < per_step; ++a) {
    const std::uint64_t seed = 0x700000 + static_cast<std::uint64_t>(a);
    allreduce.prepare(count, seed);
    allreduce.run(count);
    wrong += allreduce.count_wrong(count, seed);
  }
  for (const auto& blob : rendezvous.allgather(
           std::string_view(reinterpret_cast<const char*>(&wrong), sizeof(wrong)))) {
    std::uint64_t theirs = 0;
    std::memcpy(&theirs, blob.data(), std::min(blob.size(), sizeof(theirs)));
    run.wrong += theirs;
  }
  run.verified_allreduces = per_step;
  return run;
}

TpReport make_tp_report(const TpRun& run, const Options& options, double link_gbps) {
  TpReport r;
  r.run = run;
  r.token_us = percentiles(run.token_us);
  r.allreduce_us = percentiles(run.allreduce_us);
  r.link_gbps = link_gbps;
  r.hop_latency_us = options.nic_latency_us;
  r.floor = ring_allreduce_floor(run.shape.allreduce_bytes(), run.shape.ranks, link_gbps,
                                 options.nic_latency_us);
  r.budget_ms = options.budget_ms;
  r.compute_ms = options.compute_ms;
  r.claim_us = options.claim_us;
  if (options.claim_us) {
    r.claim_verdict = claim_below_floor(*options.claim_us, run.shape.allreduce_bytes(),
                                        run.shape.ranks, link_gbps, options.nic_latency_us);
  }
  PerTokenFigures f;
  f.model = run.model;
  f.shape = run.shape;
  f.token_p50_us = r.token_us.p50;
  f.token_p99_us = r.token_us.p99;
  f.allreduce_p50_us = r.allreduce_us.p50;
  f.floor_token_us = r.floor.total_us() * run.shape.allreduces_per_token();
  f.budget_ms = options.budget_ms;
  f.compute_ms = options.compute_ms;
  r.per_token = per_token_line(f);
  return r;
}

void print_tp_report(std::FILE* out, const TpReport& r) {
  const TpShape& s = r.run.shape;
  const int per_token = s.allreduces_per_token();
  print_line(out,
             fmt::format("# tensor parallelism: {} ({} layers, hidden {}), batch {}, {}, TP={}",
                         r.run.model, s.layers, s.hidden, s.batch, dtype_name(s.dtype), s.ranks));
  print_line(out, fmt::format("# {} all-reduces per token (2 per layer) of {} ({} x {} x {} B); "
                              "{} decode step(s) timed after {} warm-up step(s)",
                              per_token, human_bytes(s.allreduce_bytes()), s.batch, s.hidden,
                              dtype_bytes(s.dtype), r.run.steps, r.run.warmup_steps));
  print_line(out, "#");
  print_line(out, fmt::format("# {:<22}{:>11}{:>11}{:>11}{:>11}{:>11}", "", "p50", "p90", "p99",
                              "min", "max"));
  const Percentiles& t = r.token_us;
  print_line(out,
             fmt::format("  {:<22}{:>11.3f}{:>11.3f}{:>11.3f}{:>11.3f}{:>11.3f}", "per token (ms)",
                         t.p50 / 1e3, t.p90 / 1e3, t.p99 / 1e3, t.min / 1e3, t.max / 1e3));
  const Percentiles& a = r.allreduce_us;
  print_line(out, fmt::format("  {:<22}{:>11.1f}{:>11.1f}{:>11.1f}{:>11.1f}{:>11.1f}",
                              "per all-reduce (us)", a.p50, a.p90, a.p99, a.min, a.max));
  print_line(out, "#");
  const double floor_token_us = r.floor.total_us() * per_token;
  print_line(out,
             fmt::format("# floor: ring over {} ranks at {:g} Gb/s, {:g} us per hop: {:.2f} us "
                         "serialisation + {:.2f} us latency = {:.2f} us per all-reduce, "
                         "{:.3f} ms per token",
                         s.ranks, r.link_gbps, r.hop_latency_us, r.floor.serialisation_us,
                         r.floor.latency_us, r.floor.total_us(), floor_token_us / 1e3));
  print_line(out,
             fmt::format("# measured / floor: per all-reduce p50 {:.1f}x, per token p50 {:.1f}x",
                         r.floor.total_us() > 0 ? a.p50 / r.floor.total_us() : 0.0,
                         floor_token_us > 0 ? t.p50 / floor_token_us : 0.0));
  if (r.claim_us) {
    print_line(out, r.claim_verdict ? "# claim: " + *r.claim_verdict
                                    : fmt::format("# claim: {:g} us per all-reduce is at or above "
                                                  "the floor of {:.2f} us",
                                                  *r.claim_us, r.floor.total_us()));
  }
  print_line(out, fmt::format("# verified: every element of the {} all-reduces of one more step: "
                              "{} wrong",
                              r.run.verified_allreduces, r.run.wrong));
  print_line(out, r.per_token);
}

std::string render_tp_json(const RunInfo& info, const TpReport& r) {
  const TpShape& s = r.run.shape;
  tools::JsonWriter j;
  j.begin_object();
  write_run_fields(j, info);
  write_fabric_fields(j, info);
  j.key("interrupted").value(info.interrupted);
  j.key("api").value(api_name(info.api));
  j.key("plugin").value(info.plugin_path);
  j.key("memory").value(info.memory);
  j.key("model").value(r.run.model);
  j.key("layers").value(s.layers);
  j.key("hidden").value(s.hidden);
  j.key("batch").value(s.batch);
  j.key("dtype").value(dtype_name(s.dtype));
  j.key("tp").value(s.ranks);
  j.key("allreduces_per_token").value(s.allreduces_per_token());
  j.key("allreduce_bytes").value(static_cast<std::uint64_t>(s.allreduce_bytes()));
  j.key("steps").value(r.run.steps);
  j.key("warmup_steps").value(r.run.warmup_steps);
  write_percentiles(j, "token_us", r.token_us);
  write_percentiles(j, "allreduce_us", r.allreduce_us);
  j.key("floor").begin_object();
  j.key("link_gbps").value(r.link_gbps);
  j.key("hop_latency_us").value(r.hop_latency_us);
  j.key("serialisation_us").value(r.floor.serialisation_us);
  j.key("latency_us").value(r.floor.latency_us);
  j.key("allreduce_us").value(r.floor.total_us());
  j.key("token_us").value(r.floor.total_us() * s.allreduces_per_token());
  j.end_object();
  j.key("budget_ms").value(r.budget_ms);
  if (r.compute_ms) {
    j.key("compute_ms").value(*r.compute_ms);
  } else {
    j.key("compute_ms").null();
  }
  if (r.claim_us) {
    j.key("claim_us").value(*r.claim_us);
    j.key("claim_below_floor").value(r.claim_verdict.has_value());
  }
  j.key("per_token").value(r.per_token);
  j.key("verified_allreduces").value(r.run.verified_allreduces);
  j.key("wrong_total").value(r.run.wrong);
  j.key("status").value(r.run.wrong != 0 ? "fail" : info.interrupted ? "interrupted" : "pass");
  j.end_object();
  return j.str() + "\n";
}

}  // namespace roce::bench
