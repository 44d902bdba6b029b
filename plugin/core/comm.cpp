// Comm: see comm.h.
#include "core/comm.h"

#include "util/cancellation.h"

namespace roce {

Comm::~Comm() {
  magic_ = 0;
}

const char* Comm::kind_name() const noexcept {
  switch (kind_) {
    case CommKind::Listen:
      return "listen";
    case CommKind::Send:
      return "send";
    case CommKind::Recv:
      return "recv";
  }
  return "?";
}

std::string Comm::fabric_context() const noexcept {
  if (kind_ == CommKind::Listen || device_->fabric() == nullptr) {
    return {};
  }
  // Reading sysfs is a cancellation point, and this runs on the data path's error reports,
  // outside the entry points' guard: no forced unwind into the catch below.
  const CancellationHeldOff held_off;
  try {
    // Read now: the failure's loss or congestion is in the counters already (the NIC counted
    // the timeouts and sequence errors before it reported the completion error).
    const std::string report = device_->fabric()->report_since_init();
    return report.empty() ? report : "; " + report;
  } catch (...) {
    return {};  // the failure is reported without the counters rather than not at all
  }
}

}  // namespace roce
