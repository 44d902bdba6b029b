// The point-to-point benchmarks, identical for the plugin and raw verbs (they run on an Endpoint):
// pingpong (round trips, percentiles), bw (rank 0 streams to rank 1 with a window of outstanding
// requests) and bibw (both stream at once). Every size ends with a verification round whose
// elements are checked on the receiving side; the wrong counts of both ranks are summed.
#pragma once

#include <cstdint>

#include "endpoint.h"
#include "options.h"
#include "results.h"
#include "sweep.h"

namespace roce::bench {

class Rendezvous;

// Collective over the 2 ranks; the returned Row is complete on rank 0.
Row run_p2p(Endpoint& endpoint, Rendezvous& rendezvous, const Options& options,
            const SizeStep& step, std::uint64_t seed);

// Flips one bit of the 32-bit word at `offset` bytes in `buffer` (the --inject-corruption aid).
void corrupt_word(Buffer& buffer, std::size_t offset);

}  // namespace roce::bench
