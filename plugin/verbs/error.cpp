// The verbs layer's errno helpers: see error.h.
#include "verbs/error.h"

#include <cerrno>
#include <cstring>

namespace roce::verbs {

int verbs_errno(int rc) noexcept {
  if (rc >= 0) {
    return rc;
  }
  return errno != 0 ? errno : EIO;
}

}  // namespace roce::verbs
