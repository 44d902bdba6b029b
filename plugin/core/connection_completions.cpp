// Completion polling of connected comms; see connection_completions.h.
#include "core/connection_completions.h"

#include "core/completion_status.h"

namespace roce {

int poll_connection_completions(Comm& comm, verbs::CompletionQueue& cq, std::span<ibv_wc> wcs,
                                const char* arrow, const std::string& peer) noexcept {
  const int got = cq.poll(static_cast<int>(wcs.size()), wcs.data());
  if (got < 0) [[unlikely]] {
    comm.fail(ncclSystemError, "polling cq {} failed ({}); the device may have failed", cq.id(),
              got);
    return -1;
  }
  for (int k = 0; k < got; ++k) {
    const ibv_wc& wc = wcs[static_cast<size_t>(k)];
    if (wc.status != IBV_WC_SUCCESS) [[unlikely]] {
      const CompletionStatusInfo info = completion_status_info(wc.status);
      const DeviceRuntime& device = comm.device();
      comm.fail(info.result,
                "completion error {} ({}), vendor_err 0x{:x}, opcode {}, qp 0x{:x}; local gid {} "
                "(index {}) {} {}; {}",
                info.name, static_cast<int>(wc.status), wc.vendor_err, static_cast<int>(wc.opcode),
                wc.qp_num, device.gid_text(), device.gid_index(), arrow, peer, info.hint);
      return -1;
    }
  }
  return got;
}

}  // namespace roce
