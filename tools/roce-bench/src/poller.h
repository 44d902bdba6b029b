// How roce-bench waits: it polls (like NCCL's proxy progress thread) and, after a run of empty
// polls, gives the CPU away as --poll says (yield: sched_yield; sleep: sched_yield for a while,
// then 20 us naps, for machines with fewer cores than ranks plus their NIC emulation threads;
// spin: never), and declares the run hung when nothing completes for --timeout seconds, or when a
// peer rank is gone.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "options.h"

namespace roce::bench {

class Rendezvous;

class Poller {
 public:
  Poller(double timeout_s, int sleep_us, Rendezvous* rendezvous, PollPolicy policy)
      : timeout_(timeout_s), sleep_us_(sleep_us), rendezvous_(rendezvous), policy_(policy) {}

  // Something completed: the hang timer restarts.
  void progress() { idle_ = 0; }
  // Nothing completed in this pass. Throws BenchError "<what> made no progress for N s" or when
  // a peer rank has exited.
  void idle(const char* what);
  void idle(const std::string& what) { idle(what.c_str()); }

 private:
  std::chrono::duration<double> timeout_;
  int sleep_us_;
  Rendezvous* rendezvous_;
  PollPolicy policy_;
  std::uint64_t idle_ = 0;
  std::chrono::steady_clock::time_point idle_since_{};
  std::chrono::steady_clock::time_point next_check_{};
};

}  // namespace roce::bench
