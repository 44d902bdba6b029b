// Polling a connected comm's completion queue, shared by the send and the receive side. A failed
// poll or a completion in error ends the comm, with a message naming both ends of the
// connection; the two sides differ only in its arrow ("->" to the peer, "<-" from it).
#pragma once

#include <infiniband/verbs.h>

#include <span>
#include <string>

#include "core/comm.h"
#include "verbs/completion_queue.h"

namespace roce {

// Up to wcs.size() completions into wcs: how many, all successful; or -1 when the poll failed or
// one of them is in error, the comm's failure then being recorded and logged (Comm::fail).
int poll_connection_completions(Comm& comm, verbs::CompletionQueue& cq, std::span<ibv_wc> wcs,
                                const char* arrow, const std::string& peer) noexcept;

}  // namespace roce
