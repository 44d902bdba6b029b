// The point-to-point benchmarks, identical for the plugin and raw verbs (they run on an Endpoint):
// pingpong (round trips, percentiles), bw (rank 0 streams to rank 1 with a window of outstanding
// requests) and bibw (both stream at once). A measurement runs in phases (warm-up, timed blocks,
// finish) so that --compare-raw can alternate the two paths block by block and both see the same
// machine conditions. finish() runs a verification round whose elements are checked on the
// receiving side; the wrong counts of both ranks are summed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "endpoint.h"
#include "options.h"
#include "poller.h"
#include "results.h"
#include "sweep.h"

namespace roce::bench {

class Rendezvous;

class P2pMeasurement {
 public:
  // Every call below is collective over the 2 ranks.
  P2pMeasurement(Endpoint& ep, Rendezvous& rendezvous, const Options& options, const SizeStep& step,
                 std::uint64_t seed);
  void warmup();
  // Adds `iters` timed round trips (pingpong) or messages (bw, bibw).
  void timed(int iters);
  // Verifies one round of data and returns the Row (complete on rank 0).
  Row finish();

 private:
  using Clock = std::chrono::steady_clock;
  void send(int slot, Ticket& ticket, const char* what);
  void recv(int slot, Ticket& ticket, const char* what);
  void wait(Ticket& ticket, const char* what);
  void wait_both(Ticket& a, Ticket& b, const char* what);
  void pingpong(int count, bool record);
  // Streams `count` messages with up to window_ outstanding per direction; returns when the
  // stream started (after its barrier).
  Clock::time_point stream(int count);
  std::uint64_t check_slot(int slot, std::uint64_t seed);
  void fill_slot(int slot, std::uint64_t seed);
  std::size_t words() const { return step_.bytes / sizeof(std::uint32_t); }
  std::string where(const char* what) const;

  Endpoint& ep_;
  Rendezvous& rendezvous_;
  const Options& options_;
  SizeStep step_;
  std::uint64_t seed_;
  int rank_;
  Poller poller_;
  int window_;
  bool sending_;
  bool receiving_;
  std::vector<double> rtts_;  // pingpong round trips, us
  double elapsed_us_ = 0;     // bw/bibw: timed streaming on this rank
  int timed_iters_ = 0;
};

// warmup, timed(step.iters), finish.
Row run_p2p(Endpoint& endpoint, Rendezvous& rendezvous, const Options& options,
            const SizeStep& step, std::uint64_t seed);

// Flips one bit of the 32-bit word at `offset` bytes in `buffer` (the --inject-corruption aid).
void corrupt_word(Buffer& buffer, std::size_t offset);

}  // namespace roce::bench
