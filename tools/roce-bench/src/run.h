// The body of one rank (cluster mode, or a rank the launcher started) and the --init-check mode.
#pragma once

#include <string>
#include <vector>

#include "options.h"

namespace roce::bench {

// Runs this rank: rendezvous, plugin and/or raw verbs setup, every size, output on rank 0.
// Returns the exit status.
int run_rank(const Options& options, const std::vector<std::string>& args);

// Loads and inits the plugin, lists every device with its properties and the plugin's init
// banner, connects a loopback pair on one thread and moves one verified message through it.
int run_init_check(const Options& options);

}  // namespace roce::bench
