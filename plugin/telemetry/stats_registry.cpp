// The registry of comms the stats writer reports.
#include "telemetry/stats_registry.h"

#include <algorithm>

namespace roce::telemetry {

StatsRegistry& StatsRegistry::instance() {
  // Never destroyed: comms closed from static destructors (NCCL dlcloses v8..v10 plugins
  // without finalize) may still unregister.
  static auto* registry = new StatsRegistry;
  return *registry;
}

void StatsRegistry::add(const CommStats* stats) {
  const std::lock_guard lock(mutex_);
  live_.push_back(stats);
}

CommStatsSnapshot StatsRegistry::remove(const CommStats* stats) {
  CommStatsSnapshot last = stats->snapshot(true);
  const std::lock_guard lock(mutex_);
  std::erase(live_, stats);
  if (closed_limit_ > 0) {
    closed_.push_back(last);
    trim_closed();
  }
  return last;
}

void StatsRegistry::keep_closed(std::size_t limit) {
  const std::lock_guard lock(mutex_);
  closed_limit_ = limit;
  trim_closed();
  if (closed_.empty()) {
    closed_.shrink_to_fit();  // give the memory back, not just the elements
  }
}

std::size_t StatsRegistry::closed_kept() const {
  const std::lock_guard lock(mutex_);
  return closed_.size();
}

void StatsRegistry::trim_closed() {
  while (closed_.size() > closed_limit_) {
    closed_.pop_front();
    ++closed_dropped_;
  }
}

std::vector<CommStatsSnapshot> StatsRegistry::snapshot_all() const {
  const std::lock_guard lock(mutex_);
  std::vector<CommStatsSnapshot> all;
  all.reserve(live_.size() + closed_.size());
  for (const CommStats* s : live_) {
    all.push_back(s->snapshot());
  }
  all.insert(all.end(), closed_.begin(), closed_.end());
  return all;
}

std::size_t StatsRegistry::closed_dropped() const {
  const std::lock_guard lock(mutex_);
  return closed_dropped_;
}

}  // namespace roce::telemetry
