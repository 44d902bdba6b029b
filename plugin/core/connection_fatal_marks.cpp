// See connection_fatal_marks.h.
#include "core/connection_fatal_marks.h"

namespace roce {

ncclResult_t check_connection_fatal_marks(Comm& comm, const verbs::CompletionQueue& cq,
                                          std::span<verbs::QueuePair* const> qps,
                                          const char* direction, const std::string& peer) noexcept {
  if (comm.device().fatal()) [[unlikely]] {
    return comm.fail(ncclSystemError,
                     "the device reported a fatal asynchronous event (see the event logged "
                     "above); connection {} {} is lost",
                     direction, peer);
  }
  if (cq.has_fatal_event()) [[unlikely]] {
    return comm.fail(ncclSystemError, "cq {} reported IBV_EVENT_CQ_ERR (overrun); connection {} {}",
                     cq.id(), direction, peer);
  }
  for (const verbs::QueuePair* qp : qps) {
    if (qp->has_fatal_event()) [[unlikely]] {
      return comm.fail(ncclRemoteError, "qp 0x{:x} reported a fatal asynchronous event; {} {}",
                       qp->qp_num(), direction, peer);
    }
  }
  return ncclSuccess;
}

}  // namespace roce
