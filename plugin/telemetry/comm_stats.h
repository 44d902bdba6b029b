// Per-connection telemetry, always on: what a comm has carried (messages, bytes, errors) and how
// long its requests took, as latency histograms: isend posted to completion, the time an isend
// waited for the peer's clear-to-send (the receiver was late), irecv posted to completion.
// Counters count every request; the completion histogram records one request in
// `sample_every` (NCCL_ROCE_STATS_SAMPLE), which keeps its cost, a clock read and a bucket
// update, off most messages while the percentiles of any comm that carries traffic stay those of
// thousands of requests.
// The comm's data path writes (one thread at a time, as NCCL drives a comm); the stats writer
// and close() read snapshots from any thread. Recording costs a clock read per request and a
// few plain stores: no lock, no allocation, no system call (the clock is rdtsc, clock.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "telemetry/clock.h"
#include "telemetry/latency_histogram.h"

namespace roce::telemetry {

enum class Direction { Send, Recv };

struct CommIdentity {
  Direction direction = Direction::Send;
  std::string device;  // "mlx5_0"
  std::string peer;    // "10.0.0.2 (gid ::ffff:10.0.0.2)"
  int qps = 1;
  int traffic_class = 0;
};

struct CommStatsSnapshot {
  uint64_t id = 0;  // unique in the process
  CommIdentity identity;
  double age_s = 0;  // since the comm was connected
  bool closed = false;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  uint64_t stalls = 0;                    // stall warnings given
  uint64_t recoveries = 0;                // recovery epochs that ended with the comm carrying on
  uint64_t recovery_us = 0;               // their time in all, failure to carrying on
  LatencyHistogram::Snapshot completion;  // post to completion (isend or irecv)
  LatencyHistogram::Snapshot cts_wait;    // sends only: time until the clear-to-send was there
};

class CommStats {
 public:
  explicit CommStats(CommIdentity identity, uint32_t sample_every = 1);

  // The data path.
  // A request that carried `bytes` completed: counted. True when its latency is to be
  // recorded (sample(), one request in sample_every): only then need the clock be read.
  bool count(uint64_t bytes) noexcept {
#if defined(ROCE_TELEMETRY_BASELINE)
    return false;  // the hooks' cost baseline: nothing recorded
#endif
    bump(messages_);
    bytes_.store(bytes_.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
    return --until_sample_ == 0;
  }
  // Whether the next count() will choose its request for sampling. A caller that knows it will
  // not may count that request without looking at count()'s answer.
  bool next_count_samples() const noexcept {
#if defined(ROCE_TELEMETRY_BASELINE)
    return false;
#endif
    return until_sample_ == 1;
  }
  // The latency of the request count() chose, posted and done at these now_ticks() values.
  void sample(uint64_t posted, uint64_t done) noexcept {
    until_sample_ = sample_every_;
    completion_.record(done > posted ? done - posted : 0);
  }
  // Both, for a caller that has the completion time anyway (and the tests).
  void completed(uint64_t bytes, uint64_t posted, uint64_t done) noexcept {
    if (count(bytes)) {
      sample(posted, done);
    }
  }
  // Only sends that found no clear-to-send at first are recorded; the snapshot counts every
  // other completed send as a wait of 0 (most sends, and the cheapest path).
  void cts_waited(uint64_t ticks) noexcept {
#if defined(ROCE_TELEMETRY_BASELINE)
    return;
#endif
    cts_wait_.record(ticks);
  }
  void failed() noexcept {
    bump(errors_);
  }
  void stall_reported() noexcept {
    bump(stalls_);
  }
  // A recovery epoch ended with the comm carrying on, `us` after its failure.
  void recovered(uint64_t us) noexcept {
    bump(recoveries_);
    recovery_us_.store(recovery_us_.load(std::memory_order_relaxed) + us,
                       std::memory_order_relaxed);
  }
  uint64_t messages() const noexcept {
    return messages_.load(std::memory_order_relaxed);
  }

  uint64_t id() const noexcept {
    return id_;
  }
  const CommIdentity& identity() const noexcept {
    return identity_;
  }
  CommStatsSnapshot snapshot(bool closed = false) const;

 private:
  static void bump(std::atomic<uint64_t>& counter) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  uint64_t id_;
  CommIdentity identity_;
  uint64_t created_ticks_;
  std::atomic<uint64_t> messages_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> stalls_{0};
  std::atomic<uint64_t> recoveries_{0};
  std::atomic<uint64_t> recovery_us_{0};
  uint32_t sample_every_;
  uint32_t until_sample_ = 1;    // the first request is sampled
  LatencyHistogram completion_;  // one request in sample_every_
  LatencyHistogram cts_wait_;
};

// "send comm to 10.0.0.2 (gid ...) on mlx5_0, 2 QPs, tc 106: 1200 messages, 4.69 MiB, 0 errors;
// completion p50 12.0 us p99 30.0 us max 41.0 us; clear-to-send wait p50 0 us p99 2.0 us"
std::string summary_line(const CommStatsSnapshot& s);

}  // namespace roce::telemetry
