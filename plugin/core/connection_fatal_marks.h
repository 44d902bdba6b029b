// The fatal asynchronous-event marks a connected comm looks at: the device's, its completion
// queue's and its queue pairs'. Shared by the send and the receive side, which differ only in
// the direction word of the message ("to" the peer, "from" the peer).
#pragma once

#include <span>
#include <string>

#include "core/comm.h"
#include "nccl_net/types.h"
#include "verbs/completion_queue.h"
#include "verbs/queue_pair.h"

namespace roce {

// ncclSuccess, or the comm's failure (recorded and logged once through Comm::fail) for the first
// mark that is set. `direction` is "to" or "from", `peer` the peer's address.
ncclResult_t check_connection_fatal_marks(Comm& comm, const verbs::CompletionQueue& cq,
                                          std::span<verbs::QueuePair* const> qps,
                                          const char* direction, const std::string& peer) noexcept;

}  // namespace roce
