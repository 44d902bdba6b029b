// The plugin's one errno formatter: "ECONNREFUSED (Connection refused)", the symbolic name first
// (what operators search for), or "errno 1234" for a value libc does not know. Thread-safe. Every
// log line and error of the plugin that names a failed call's cause prints it this way.
#pragma once

#include <string>

namespace roce {

std::string errno_text(int error_number);

}  // namespace roce
