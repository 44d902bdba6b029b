// Thread-safe text for an errno value ("Connection refused (ECONNREFUSED)"), for log lines that
// name a failed system call's cause.
#pragma once

#include <string>

namespace roce {

std::string errno_text(int error_number);

}  // namespace roce
