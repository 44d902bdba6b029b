// roce-bench as NCCL's profiler: for v10 and v11 it passes a profiler callback to init and a
// profiler handle with every isend and irecv, as NCCL does, and checks the network plugin events
// the plugin emits: every start names the IB transport's v1 descriptor (NCCL_PROFILER_NET_TYPE_IB
// | 1, type ncclProfileQp, a QP number), every stop closes an event that was started, send events
// carry the bytes of their isend, and by the end every started event is stopped. A plugin that
// emits no events passes (events are optional), one that emits wrong ones fails the run.
#pragma once

#include <cstdint>
#include <string>

#include "nccl_net/types.h"

namespace roce::bench {

struct ProfilerTally {
  std::uint64_t starts = 0;
  std::uint64_t stops = 0;
  std::uint64_t send_starts = 0;
  std::uint64_t send_bytes = 0;  // the lengths the send events reported
  std::uint64_t recv_starts = 0;
  std::uint64_t bad = 0;  // a malformed start, or a stop of an event never started
  std::string first_problem;
};

// The callback to pass to init.
ncclProfilerCallback_t profiler_callback();
// A profiler handle to pass with a request (NCCL's is a pointer into its proxy state).
void* profiler_handle();
ProfilerTally profiler_tally();
// The bytes of the isends the plugin accepted while a handle was passed (what send events must
// add up to).
void profiler_note_send(std::uint64_t bytes);
std::uint64_t profiler_sent_bytes();

// nullopt-like: empty when the events are consistent, else why not.
std::string profiler_problem(const ProfilerTally& tally, std::uint64_t sent_bytes);

}  // namespace roce::bench
