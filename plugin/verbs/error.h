// Errors of the verbs layer. Setup code (opening devices, creating objects, QP transitions)
// throws VerbsError with one complete line: the object (device, QP number), the operation, the
// attribute at fault when known, the errno by name, and the likely fix. Callers log what() once.
#pragma once

#include <stdexcept>
#include <string>

#include "util/errno_text.h"

namespace roce::verbs {

class VerbsError : public std::runtime_error {
 public:
  VerbsError(const std::string& message, int error_number)
      : std::runtime_error(message), errno_(error_number) {}
  // The errno value reported by the failing call (0 when the failure was a check of ours).
  int error_number() const noexcept { return errno_; }

 private:
  int errno_;
};

// The plugin's one errno formatter (util/errno_text.h), here for the verbs layer's callers.
using roce::errno_text;

// Verbs calls report failure either as a positive errno or as -1 with errno set; this returns
// the errno value for both conventions (0 for success).
int verbs_errno(int rc) noexcept;

}  // namespace roce::verbs
