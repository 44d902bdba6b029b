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
