// One table row per size, and the series of rows a path produced. Time is in microseconds and
// bandwidth in GB/s (1e9 bytes per second), as nccl-tests prints them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "stats.h"

namespace roce::bench {

struct Row {
  std::size_t bytes = 0;
  std::size_t count = 0;  // float elements
  int iters = 0;
  double time_us = 0;  // pingpong: one-way latency (median round trip / 2); bw: per message;
                       // allreduce: per operation (slowest rank's mean)
  double algbw = 0;
  double busbw = 0;
  std::size_t wrong = 0;
  bool has_rtt = false;
  Percentiles rtt_us;  // pingpong round trips
};

struct Series {
  std::string label;  // "plugin" or "raw"
  std::vector<Row> rows;
};

inline double gbps(std::size_t bytes, double time_us) {
  return time_us > 0 ? static_cast<double>(bytes) / (time_us * 1e3) : 0;
}

}  // namespace roce::bench
