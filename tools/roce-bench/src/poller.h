// How roce-bench waits: it polls (like NCCL's proxy progress thread) and, after a run of empty
// polls, gives the CPU away as --poll says (yield: sched_yield; sleep: sched_yield for a while,
// then 20 us naps, for machines with fewer cores than ranks plus their NIC emulation threads;
// spin: never), and declares the run hung when nothing completes for --timeout seconds, or when a
// peer rank is gone.
#pragma once

#include <chrono>
#include <concepts>
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
  void idle(const char* what) {
    if (pace()) {
      check(what);
    }
  }
  // The same, with `describe()` giving the text (a std::string): called only when the checks are
  // due, so that an idle pass builds no string. An empty poll of a fast transport takes a few
  // hundred instructions; formatting and freeing a string on every pass cost more than that, and
  // added to how late the benchmark saw each completion.
  template <typename Describe>
  requires std::invocable<const Describe&>
  void idle(const Describe& describe) {
    if (pace()) {
      check(describe().c_str());
    }
  }

 private:
  // Gives the CPU away as the policy says; true when the hang and liveness checks are due.
  bool pace();
  void check(const char* what);

  std::chrono::duration<double> timeout_;
  int sleep_us_;
  Rendezvous* rendezvous_;
  PollPolicy policy_;
  std::uint64_t idle_ = 0;
  std::chrono::steady_clock::time_point idle_since_{};
  std::chrono::steady_clock::time_point next_check_{};
};

}  // namespace roce::bench
