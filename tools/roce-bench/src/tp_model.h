// The per-token question of tensor-parallel decoding, in numbers: how many all-reduces one
// decoded token costs and how large each is (model presets or explicit shapes), and the physical
// floor of those all-reduces over a given link. Pure arithmetic, pinned by unit tests, so that
// what roce-bench and examples/tp_allreduce.py print can be checked by hand.
//
// The floor is the ring algorithm's, counted the way NCCL's cost model counts it (an all-reduce
// over n ranks is 2(n-1) steps; each step moves 1/n of the data over every rank's link and pays
// one per-hop latency): time = 2(n-1)/n * S / link + 2(n-1) * latency. It assumes each rank has
// its own NIC port at the link speed and every hop crosses the fabric (TP across nodes).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "dtype.h"

namespace roce::bench {

struct ModelPreset {
  std::string_view name;     // what --model takes, e.g. "llama3-70b"
  std::string_view display;  // e.g. "Llama 3 70B"
  int layers;                // transformer blocks
  int hidden;                // model dimension: the all-reduced activation's width
};

// Every preset, in the order --list-models prints them.
std::span<const ModelPreset> model_presets();
const ModelPreset* find_model(std::string_view name);
// "llama3-8b, llama3-70b, ..." for error messages.
std::string model_names();

// One decode step of tensor parallelism: each transformer block all-reduces its attention output
// and its MLP output, a (batch x hidden) tensor of `dtype`, across the TP group.
struct TpShape {
  int layers = 0;
  int hidden = 0;
  int batch = 0;
  DType dtype = DType::F16;
  int ranks = 0;  // the TP degree

  int allreduces_per_token() const { return 2 * layers; }
  std::size_t allreduce_bytes() const {
    return static_cast<std::size_t>(batch) * static_cast<std::size_t>(hidden) * dtype_bytes(dtype);
  }
};

struct AllReduceFloor {
  double serialisation_us = 0;  // 2(n-1)/n * S at the link rate
  double latency_us = 0;        // 2(n-1) hops
  double total_us() const { return serialisation_us + latency_us; }
};

// Time to put `bytes` on a link of `link_gbps` (10^9 bit/s) once.
double wire_time_us(std::size_t bytes, double link_gbps);
// The ring all-reduce floor of `bytes` over `ranks` ranks (ranks >= 2).
AllReduceFloor ring_allreduce_floor(std::size_t bytes, int ranks, double link_gbps,
                                    double hop_latency_us);

// What a claimed per-all-reduce time means against the floor: nullopt when the claim is at or
// above the floor, else one sentence saying why it cannot be met.
std::optional<std::string> claim_below_floor(double claim_us, std::size_t bytes, int ranks,
                                             double link_gbps, double hop_latency_us);

// What one tensor-parallel measurement found, for the one line that answers the per-token
// question. roce-bench --mode tp and examples/tp_allreduce.py print the same line.
struct PerTokenFigures {
  std::string model;  // "Llama 3 70B", or "2 x 4096" style for an explicit shape
  TpShape shape;
  double token_p50_us = 0;  // communication per token (all of its all-reduces)
  double token_p99_us = 0;
  double allreduce_p50_us = 0;
  double floor_token_us = 0;  // the ring floor of one token's all-reduces
  double budget_ms = 15;
  std::optional<double> compute_ms;
};

// "per token: Llama 3 70B, TP=4, batch 16, fp16: 160 all-reduces of 256 KiB; communication p50
// 12.34 ms, p99 15.00 ms (77.1 us per all-reduce); floor 0.50 ms (24.7x); 82% of a 15 ms budget"
// and, with a compute time, "; with 10 ms of compute: 22.34 ms per token, over the budget by
// 7.34 ms" (or "within the budget, 2.10 ms to spare").
std::string per_token_line(const PerTokenFigures& figures);

// The display name of --model, or "custom (L layers, hidden H)".
std::string model_display(std::string_view preset, int layers, int hidden);

// "256 KiB", "1.5 MiB", "96 B": sizes as the per-token line prints them.
std::string human_bytes(std::size_t bytes);

}  // namespace roce::bench
