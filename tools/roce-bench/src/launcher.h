// The default way to run: this process starts the ranks on this machine (fork + exec of itself
// with --rank/--nranks/--rendezvous), each with its own vroce device, holds the rendezvous socket
// for rank 0 (passed down, so no port race), waits for them, and stops the others as soon as one
// fails. Children die with the launcher (PR_SET_PDEATHSIG), so nothing outlives a killed run.
#pragma once

#include <string>
#include <vector>

#include "options.h"

namespace roce::bench {

// The environment variable through which rank 0 inherits the listening rendezvous socket.
inline constexpr const char* kRendezvousFdEnv = "ROCE_BENCH_RENDEZVOUS_FD";
// Set for the ranks the launcher starts: they show the user's command, not the appended
// --rank/--nranks/--rendezvous (kAppendedArgs arguments).
inline constexpr const char* kLaunchedEnv = "ROCE_BENCH_LAUNCHED";
inline constexpr std::size_t kAppendedArgs = 6;
// A file rank 0 creates once it has written its JSON result: when a run fails before that, the
// launcher writes a JSON failure document itself, so --json always yields one document.
inline constexpr const char* kJsonMarkEnv = "ROCE_BENCH_JSON_WRITTEN";

// Returns the exit status for the whole run.
int launch_ranks(const Options& options, const std::vector<std::string>& args);

// The libibverbs the ranks load: --ibverbs, else NCCL_IBVERBS_LIB, else vroce's beside this
// program. Throws BenchError when there is none.
std::string vroce_library(const Options& options);

}  // namespace roce::bench
