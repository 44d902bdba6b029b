// The process's comms, for the stats writer: comms register when connected and unregister when
// closed (setup and teardown paths, under a mutex; the data path never touches the registry).
// A closed comm's final snapshot is kept (the newest 4096) so that the next file write and the
// exit-time write still report it.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "telemetry/comm_stats.h"

namespace roce::telemetry {

class StatsRegistry {
 public:
  static StatsRegistry& instance();

  void add(const CommStats* stats);
  // Takes the final snapshot; returns it for the close-time summary.
  CommStatsSnapshot remove(const CommStats* stats);

  // Live comms now, then the closed ones kept, oldest first.
  std::vector<CommStatsSnapshot> snapshot_all() const;
  std::size_t closed_dropped() const;

  static constexpr std::size_t kClosedKept = 4096;

 private:
  mutable std::mutex mutex_;
  std::vector<const CommStats*> live_;
  std::deque<CommStatsSnapshot> closed_;
  std::size_t closed_dropped_ = 0;
};

}  // namespace roce::telemetry
