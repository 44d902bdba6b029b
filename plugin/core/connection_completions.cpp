// The failure reports of completion polling; see connection_completions.h.
#include "core/connection_completions.h"

#include "core/completion_status.h"

namespace roce {

int fail_poll(Comm& comm, const verbs::CompletionQueue& cq, int got) noexcept {
  comm.fail(ncclSystemError, "polling cq {} failed ({}); the device may have failed", cq.id(), got);
  return -1;
}

int fail_completion(Comm& comm, const ibv_wc& wc, const char* arrow,
                    const std::string& peer) noexcept {
  const CompletionStatusInfo info = completion_status_info(wc.status);
  const DeviceRuntime& device = comm.device();
  comm.fail(info.result,
            "completion error {} ({}), vendor_err 0x{:x}, opcode {}, qp 0x{:x}; local gid {} "
            "(index {}) {} {}; {}",
            info.name, static_cast<int>(wc.status), wc.vendor_err, static_cast<int>(wc.opcode),
            wc.qp_num, device.gid_text(), device.gid_index(), arrow, peer, info.hint);
  return -1;
}

}  // namespace roce
