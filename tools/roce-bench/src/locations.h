// Where roce-bench finds the plugin and vroce when no path is given: next to its own executable,
// in the build tree (bin/ -> lib/, vroce/lib/) or in an installed tree (bin/ -> <libdir>/).
#pragma once

#include <string>

namespace roce::bench {

std::string executable_path();
// An existing file, or "libnccl-net-roce.so" for the dynamic loader's own search.
std::string default_plugin_path();
// An existing file, or empty when vroce is not found.
std::string default_vroce_path();

}  // namespace roce::bench
