// JSON lines and Prometheus text from comm snapshots.
#include "telemetry/stats_output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace roce::telemetry {
namespace {

const char* direction_name(Direction d) {
  return d == Direction::Send ? "send" : "recv";
}

nlohmann::json percentiles_us(const LatencyHistogram::Snapshot& h) {
  return {{"count", h.total()},
          {"p50", h.percentile_ns(50) / 1e3},
          {"p90", h.percentile_ns(90) / 1e3},
          {"p99", h.percentile_ns(99) / 1e3},
          {"max", h.percentile_ns(100) / 1e3}};
}

// The non-empty buckets as [lower bound in ns, count] pairs, so tools can merge comms.
nlohmann::json buckets(const LatencyHistogram::Snapshot& h) {
  nlohmann::json out = nlohmann::json::array();
  for (int i = 0; i < LatencyHistogram::kBuckets; ++i) {
    if (const uint64_t c = h.counts[static_cast<std::size_t>(i)]; c != 0) {
      out.push_back({static_cast<uint64_t>(static_cast<double>(LatencyHistogram::lower_bound(i)) *
                                           h.ns_per_unit),
                     c});
    }
  }
  return out;
}

// Prometheus label values escape backslash, double quote and newline.
std::string label_value(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

ProcessInfo current_process() {
  ProcessInfo p;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  p.host = host;
  p.pid = static_cast<int>(getpid());
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
      p.rank = v;
      break;
    }
  }
  p.time_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return p;
}

const FabricCounterWatch::Reading* fabric_of(
    const CommStatsSnapshot& s, const std::vector<FabricCounterWatch::Reading>& fabric) {
  for (const auto& reading : fabric) {
    if (reading.device == s.identity.device) {
      return &reading;
    }
  }
  return nullptr;
}

std::string json_line(const CommStatsSnapshot& s, const ProcessInfo& process,
                      const FabricCounterWatch::Reading* fabric) {
  nlohmann::json j = {
      {"time", process.time_s},
      {"host", process.host},
      {"pid", process.pid},
      {"rank", process.rank.empty() ? nlohmann::json(nullptr) : nlohmann::json(process.rank)},
      {"comm", s.id},
      {"direction", direction_name(s.identity.direction)},
      {"device", s.identity.device},
      {"peer", s.identity.peer},
      {"qps", s.identity.qps},
      {"traffic_class", s.identity.traffic_class},
      {"closed", s.closed},
      {"age_s", s.age_s},
      {"messages", s.messages},
      {"bytes", s.bytes},
      {"errors", s.errors},
      {"stall_warnings", s.stalls},
      {"recoveries", s.recoveries},
      {"recovery_us", s.recovery_us},
      {"completion_us", percentiles_us(s.completion)},
      {"completion_buckets_ns", buckets(s.completion)},
  };
  if (s.identity.direction == Direction::Send) {
    j["cts_wait_us"] = percentiles_us(s.cts_wait);
    j["cts_wait_buckets_ns"] = buckets(s.cts_wait);
  }
  if (fabric != nullptr) {
    nlohmann::json counters = nlohmann::json::object();
    for (std::size_t i = 0; i < kFabricCounterCount; ++i) {
      counters[kFabricCounters[i].name] =
          fabric->delta[i] ? nlohmann::json(*fabric->delta[i]) : nlohmann::json(nullptr);
    }
    j["fabric_counters"] = counters;
    j["fabric_verdict"] = fabric_verdict_name(fabric_verdict(fabric->delta));
  }
  // Invalid UTF-8 in a peer or device name must not make the writer throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string prometheus_text(const std::vector<CommStatsSnapshot>& all, const ProcessInfo& process,
                            const std::vector<FabricCounterWatch::Reading>& fabric) {
  std::string out;
  for (const PrometheusFamily& family : kPrometheusFamilies) {
    const std::string_view name = family.name;
    const bool port_family = name == "nccl_roce_port_increase_total";
    if (port_family && fabric.empty()) {
      continue;
    }
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, family.help, name, family.type);
    if (port_family) {
      for (const auto& reading : fabric) {
        for (std::size_t i = 0; i < kFabricCounterCount; ++i) {
          if (reading.delta[i]) {
            out += fmt::format(
                "{}{{host=\"{}\",pid=\"{}\",rank=\"{}\",device=\"{}\",port=\"{}\",counter=\"{}\"}} "
                "{}\n",
                name, label_value(process.host), process.pid, label_value(process.rank),
                label_value(reading.device), reading.port, kFabricCounters[i].name,
                *reading.delta[i]);
          }
        }
      }
      continue;
    }
    for (const auto& s : all) {
      const bool send = s.identity.direction == Direction::Send;
      const bool cts = name == "nccl_roce_comm_cts_wait_seconds";
      if (cts && !send) {
        continue;
      }
      const std::string labels = fmt::format(
          "host=\"{}\",pid=\"{}\",rank=\"{}\",comm=\"{}\",direction=\"{}\",device=\"{}\","
          "peer=\"{}\"",
          label_value(process.host), process.pid, label_value(process.rank), s.id,
          direction_name(s.identity.direction), label_value(s.identity.device),
          label_value(s.identity.peer));
      if (cts || name == "nccl_roce_comm_completion_seconds") {
        // Gauges with a percentile label: promtool keeps the quantile label for summaries,
        // which also carry an exact _sum the sampled histogram does not have.
        const auto& h = cts ? s.cts_wait : s.completion;
        for (const int percentile : {50, 99}) {
          out += fmt::format("{}{{{},percentile=\"{}\"}} {:.9f}\n", name, labels, percentile,
                             h.percentile_ns(percentile) / 1e9);
        }
        continue;
      }
      const uint64_t value = name == "nccl_roce_comm_messages_total" ? s.messages
                             : name == "nccl_roce_comm_bytes_total"  ? s.bytes
                             : name == "nccl_roce_comm_errors_total" ? s.errors
                                                                     : s.stalls;
      out += fmt::format("{}{{{}}} {}\n", name, labels, value);
    }
  }
  return out;
}

std::string expand_path(std::string_view pattern, std::string_view host, int pid) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[i + 1];
      if (c == 'h' || c == 'p' || c == '%') {
        out += c == 'h' ? std::string(host) : c == 'p' ? std::to_string(pid) : std::string("%");
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

}  // namespace roce::telemetry
