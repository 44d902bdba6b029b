// Polling a connected comm's completion queue, shared by the send and the receive side. A failed
// poll or a completion in error ends the comm, with a message naming both ends of the
// connection; the two sides differ only in its arrow ("->" to the peer, "<-" from it).
// The poll is inline: every test() that finds nothing costs it, so it must cost no call of its
// own; the error reports stay out of line.
#pragma once

#include <infiniband/verbs.h>

#include <span>
#include <string>

#include "core/comm.h"
#include "verbs/completion_queue.h"

namespace roce {

// Records and logs the failure of a poll that returned `got` < 0, or of the completion `wc` in
// error. Returns -1.
[[gnu::cold]] int fail_poll(Comm& comm, const verbs::CompletionQueue& cq, int got) noexcept;
[[gnu::cold]] int fail_completion(Comm& comm, const ibv_wc& wc, const char* arrow,
                                  const std::string& peer) noexcept;

// Up to wcs.size() completions into wcs: how many, all successful; or -1 when the poll failed or
// one of them is in error, the comm's failure then being recorded and logged (Comm::fail).
inline int poll_connection_completions(Comm& comm, verbs::CompletionQueue& cq,
                                       std::span<ibv_wc> wcs, const char* arrow,
                                       const std::string& peer) noexcept {
  const int got = cq.poll(static_cast<int>(wcs.size()), wcs.data());
  if (got < 0) [[unlikely]] {
    return fail_poll(comm, cq, got);
  }
  for (int k = 0; k < got; ++k) {
    if (wcs[static_cast<size_t>(k)].status != IBV_WC_SUCCESS) [[unlikely]] {
      return fail_completion(comm, wcs[static_cast<size_t>(k)], arrow, peer);
    }
  }
  return got;
}

}  // namespace roce
