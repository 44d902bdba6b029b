// Fabric counters: reading, increases and the loss/congestion verdict.
#include "telemetry/fabric_counters.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/log.h"

namespace roce::telemetry {
namespace {

std::mutex registry_mutex;
std::vector<const FabricCounterWatch*>& registry() {
  static auto* watches = new std::vector<const FabricCounterWatch*>();
  return *watches;
}

// "packet_seq_err +12, local_ack_timeout_err +3": the counters of that meaning that rose.
std::string risen(const FabricDelta& delta, FabricMeaning meaning) {
  std::string out;
  for (std::size_t i = 0; i < kFabricCounterCount; ++i) {
    if (kFabricCounters[i].meaning == meaning && delta[i].value_or(0) > 0) {
      out += fmt::format("{}{} +{}", out.empty() ? "" : ", ", kFabricCounters[i].name, *delta[i]);
    }
  }
  return out;
}

}  // namespace

std::optional<uint64_t> parse_counter(std::string_view text) noexcept {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

FabricSample read_fabric_counters(const std::string& port_dir) {
  FabricSample sample;
  for (std::size_t i = 0; i < kFabricCounterCount; ++i) {
    std::ifstream in(
        fmt::format("{}/{}/{}", port_dir, kFabricCounters[i].group, kFabricCounters[i].name));
    if (!in) {
      continue;
    }
    std::stringstream text;
    text << in.rdbuf();
    sample[i] = parse_counter(text.str());
  }
  return sample;
}

FabricDelta fabric_delta(const FabricSample& before, const FabricSample& after) noexcept {
  FabricDelta delta;
  for (std::size_t i = 0; i < kFabricCounterCount; ++i) {
    if (before[i] && after[i]) {
      delta[i] = *after[i] >= *before[i] ? *after[i] - *before[i] : *after[i];
    }
  }
  return delta;
}

FabricVerdict fabric_verdict(const FabricDelta& delta) noexcept {
  bool readable = false;
  bool loss = false;
  bool congestion = false;
  for (std::size_t i = 0; i < kFabricCounterCount; ++i) {
    if (!delta[i] || kFabricCounters[i].meaning == FabricMeaning::Traffic) {
      continue;
    }
    readable = true;
    loss |= kFabricCounters[i].meaning == FabricMeaning::Loss && *delta[i] > 0;
    congestion |= kFabricCounters[i].meaning == FabricMeaning::Congestion && *delta[i] > 0;
  }
  if (!readable) {
    return FabricVerdict::Unknown;
  }
  if (loss && congestion) {
    return FabricVerdict::LossAndCongestion;
  }
  return loss ? FabricVerdict::Loss : congestion ? FabricVerdict::Congestion : FabricVerdict::Quiet;
}

const char* fabric_verdict_name(FabricVerdict verdict) noexcept {
  switch (verdict) {
    case FabricVerdict::Quiet:
      return "none";
    case FabricVerdict::Loss:
      return "loss";
    case FabricVerdict::Congestion:
      return "congestion";
    case FabricVerdict::LossAndCongestion:
      return "loss and congestion";
    case FabricVerdict::Unknown:
      break;
  }
  return "unknown";
}

std::string fabric_report(const FabricDelta& delta, std::string_view device, int port) {
  const FabricVerdict verdict = fabric_verdict(delta);
  if (verdict == FabricVerdict::Unknown) {
    return {};
  }
  std::string out = fmt::format("fabric counters on {} port {} since init: ", device, port);
  if (verdict == FabricVerdict::Quiet) {
    return out + "no loss or congestion counted";
  }
  const std::string loss = risen(delta, FabricMeaning::Loss);
  const std::string congestion = risen(delta, FabricMeaning::Congestion);
  if (!loss.empty()) {
    out += fmt::format(
        "{}: packets were lost (sequence errors, ACK timeouts, port errors): check the links "
        "(ethtool -S on both ends for errors and discards, cables and optics) and that PFC is "
        "enabled for the RoCE priority",
        loss);
  }
  if (!congestion.empty()) {
    out += fmt::format(
        "{}{}: the fabric is congested (ECN marks and CNPs): check the PFC/ECN config (the "
        "switches' ECN marking thresholds on the RoCE queue, DCQCN on the NICs, the DSCP "
        "NCCL_IB_TC sets mapped to that queue) and what else shares the links",
        loss.empty() ? "" : "; ", congestion);
  }
  return out;
}

std::string missing_counters(const FabricSample& sample) {
  std::string out;
  for (std::size_t i = 0; i < kFabricCounterCount; ++i) {
    if (!sample[i]) {
      out += fmt::format("{}{}", out.empty() ? "" : ", ", kFabricCounters[i].name);
    }
  }
  return out;
}

FabricCounterWatch::FabricCounterWatch(std::string device, int port, std::string port_dir)
    : device_(std::move(device)), port_(port), port_dir_(std::move(port_dir)) {
  baseline_ = read_fabric_counters(port_dir_);
  for (const auto& value : baseline_) {
    any_readable_ |= value.has_value();
  }
  if (const std::string missing = missing_counters(baseline_); !missing.empty()) {
    ROCE_INFO(NCCL_INIT | NCCL_NET,
              "{} port {}: fabric counters not readable under {}: {}; failures and the "
              "NCCL_ROCE_STATS reports go without them (a NIC or kernel without these "
              "hw_counters, or sysfs hidden, as in some containers)",
              device_, port_, port_dir_, missing);
  }
  const std::lock_guard lock(registry_mutex);
  registry().push_back(this);
}

FabricCounterWatch::~FabricCounterWatch() {
  const std::lock_guard lock(registry_mutex);
  std::erase(registry(), this);
}

FabricDelta FabricCounterWatch::delta_since_init() const {
  return fabric_delta(baseline_, read_fabric_counters(port_dir_));
}

std::string FabricCounterWatch::report_since_init() const {
  if (!any_readable_) {
    return {};
  }
  return fabric_report(delta_since_init(), device_, port_);
}

std::vector<FabricCounterWatch::Reading> FabricCounterWatch::read_all() {
  // Read under the lock, so no watch goes away meanwhile (a few small files per device).
  const std::lock_guard lock(registry_mutex);
  std::vector<Reading> out;
  for (const auto* watch : registry()) {
    if (watch->any_readable_) {
      out.push_back({watch->device_, watch->port_, watch->delta_since_init()});
    }
  }
  return out;
}

}  // namespace roce::telemetry
