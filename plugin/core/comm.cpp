// Comm: see comm.h.
#include "core/comm.h"

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
  try {
    // Read now: the failure's loss or congestion is in the counters already (the NIC counted
    // the timeouts and sequence errors before it reported the completion error).
    const std::string report = device_->fabric()->report_since_init();
    return report.empty() ? report : "; " + report;
  } catch (...) {
    return {};  // the failure is reported without the counters rather than not at all
  }
}

Comm* Comm::from_any_handle(void* handle) noexcept {
  // The live mark first: a closed comm is a dead object, not to be called even to read its tag.
  if (handle == nullptr || !recycled::is_live(handle)) {
    return nullptr;
  }
  auto* comm = static_cast<Comm*>(handle);
  return comm->valid() ? comm : nullptr;
}

Comm* Comm::from_handle(void* handle, CommKind kind) noexcept {
  Comm* comm = from_any_handle(handle);
  return comm != nullptr && comm->kind() == kind ? comm : nullptr;
}

}  // namespace roce
