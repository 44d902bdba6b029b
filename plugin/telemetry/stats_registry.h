// The process's comms, for the stats writer: comms register when connected and unregister when
// closed (setup and teardown paths, under a mutex; the data path never touches the registry).
// A closed comm's final snapshot is kept (the newest kClosedKept) so that the next file write
// and the exit-time write still report it, but only while a stats file writer runs: nothing else
// reads them, and a job that opens and closes thousands of comms without NCCL_ROCE_STATS_FILE
// must not pay for them (two latency histograms, over 4 KB each).
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

  // How many closed comms' snapshots to keep: kClosedKept while the stats file writer runs, 0
  // (the default, and what stopping it sets) otherwise. Lowering it drops the oldest at once.
  void keep_closed(std::size_t limit);
  std::size_t closed_kept() const;

  static constexpr std::size_t kClosedKept = 1024;

 private:
  void trim_closed();  // under mutex_

  mutable std::mutex mutex_;
  std::vector<const CommStats*> live_;
  std::deque<CommStatsSnapshot> closed_;
  std::size_t closed_limit_ = 0;
  std::size_t closed_dropped_ = 0;
};

}  // namespace roce::telemetry
