// Model presets and the all-reduce floor.
#include "tp_model.h"

#include <fmt/format.h>

#include <array>

namespace roce::bench {
namespace {

// Layers and hidden size from each model's published configuration (num_hidden_layers,
// hidden_size). Mixtral's experts sit inside the MLP: its all-reduces are the same two per block.
constexpr std::array<ModelPreset, 6> kPresets{{
    {"llama3-8b", "Llama 3 8B", 32, 4096},
    {"llama3-70b", "Llama 3 70B", 80, 8192},
    {"llama3-405b", "Llama 3 405B", 126, 16384},
    {"mixtral-8x7b", "Mixtral 8x7B", 32, 4096},
    {"mixtral-8x22b", "Mixtral 8x22B", 56, 6144},
    {"qwen2-72b", "Qwen2 72B", 80, 8192},
}};

}  // namespace

std::span<const ModelPreset> model_presets() {
  return kPresets;
}

const ModelPreset* find_model(std::string_view name) {
  for (const auto& p : kPresets) {
    if (p.name == name) {
      return &p;
    }
  }
  return nullptr;
}

std::string model_names() {
  std::string names;
  for (const auto& p : kPresets) {
    names += names.empty() ? "" : ", ";
    names += p.name;
  }
  return names;
}

double wire_time_us(std::size_t bytes, double link_gbps) {
  return static_cast<double>(bytes) * 8.0 / (link_gbps * 1e3);
}

AllReduceFloor ring_allreduce_floor(std::size_t bytes, int ranks, double link_gbps,
                                    double hop_latency_us) {
  const double steps = 2.0 * (ranks - 1);
  AllReduceFloor floor;
  floor.serialisation_us = steps / ranks * wire_time_us(bytes, link_gbps);
  floor.latency_us = steps * hop_latency_us;
  return floor;
}

std::optional<std::string> claim_below_floor(double claim_us, std::size_t bytes, int ranks,
                                             double link_gbps, double hop_latency_us) {
  const AllReduceFloor floor = ring_allreduce_floor(bytes, ranks, link_gbps, hop_latency_us);
  if (claim_us >= floor.total_us()) {
    return std::nullopt;
  }
  const double once = wire_time_us(bytes, link_gbps);
  std::string why = fmt::format(
      "a claim of {:.2f} us per {} all-reduce over {} ranks is below the ring floor of {:.2f} us "
      "at {:g} Gb/s ({:.2f} us to serialise 2({}-1)/{} of the data, {:.2f} us for {} hops of "
      "{:g} us)",
      claim_us, human_bytes(bytes), ranks, floor.total_us(), link_gbps, floor.serialisation_us,
      ranks, ranks, floor.latency_us, 2 * (ranks - 1), hop_latency_us);
  if (claim_us < once) {
    why += fmt::format("; putting the {} on the wire once already takes {:.2f} us",
                       human_bytes(bytes), once);
  }
  return why;
}

std::string per_token_line(const PerTokenFigures& f) {
  const double token_ms = f.token_p50_us / 1e3;
  std::string line = fmt::format(
      "per token: {}, TP={}, batch {}, {}: {} all-reduces of {}; communication p50 {:.2f} ms, "
      "p99 {:.2f} ms ({:.1f} us per all-reduce); floor {:.2f} ms ({:.1f}x); {:.0f}% of a {:g} ms "
      "budget",
      f.model, f.shape.ranks, f.shape.batch, dtype_name(f.shape.dtype),
      f.shape.allreduces_per_token(), human_bytes(f.shape.allreduce_bytes()), token_ms,
      f.token_p99_us / 1e3, f.allreduce_p50_us, f.floor_token_us / 1e3,
      f.floor_token_us > 0 ? f.token_p50_us / f.floor_token_us : 0.0,
      100.0 * token_ms / f.budget_ms, f.budget_ms);
  if (f.compute_ms) {
    const double total = *f.compute_ms + token_ms;
    line += fmt::format("; with {:g} ms of compute: {:.2f} ms per token, ", *f.compute_ms, total);
    line += total > f.budget_ms
                ? fmt::format("over the budget by {:.2f} ms", total - f.budget_ms)
                : fmt::format("within the budget, {:.2f} ms to spare", f.budget_ms - total);
  }
  return line;
}

std::string model_display(std::string_view preset, int layers, int hidden) {
  if (const ModelPreset* p = find_model(preset);
      p != nullptr && p->layers == layers && p->hidden == hidden) {
    return std::string(p->display);
  }
  return fmt::format("custom ({} layers, hidden {})", layers, hidden);
}

std::string human_bytes(std::size_t bytes) {
  constexpr std::size_t kKiB = 1024;
  constexpr std::size_t kMiB = kKiB * 1024;
  if (bytes >= kMiB) {
    return bytes % kMiB == 0 ? fmt::format("{} MiB", bytes / kMiB)
                             : fmt::format("{:.2f} MiB", static_cast<double>(bytes) / kMiB);
  }
  if (bytes >= kKiB) {
    return bytes % kKiB == 0 ? fmt::format("{} KiB", bytes / kKiB)
                             : fmt::format("{:.2f} KiB", static_cast<double>(bytes) / kKiB);
  }
  return fmt::format("{} B", bytes);
}

}  // namespace roce::bench
