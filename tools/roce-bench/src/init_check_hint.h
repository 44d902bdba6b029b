// What `roce-bench --init-check` says when it fails on a machine whose verbs library is not
// vroce: most such machines simply have no RDMA NIC, and the plugin runs there on vroce, this
// build's emulated RoCEv2 NIC. The hint names the settings that make the check pass.
#pragma once

#include <optional>
#include <string>

#include "options.h"

namespace roce::bench {

// The hint text (several lines), or nullopt when the verbs library in use is already vroce
// (then the failure has another cause, which the check's own lines name).
std::optional<std::string> vroce_init_check_hint(const Options& options);

// The libibverbs the plugin loads, as NCCL would pick it: --ibverbs, else NCCL_IBVERBS_LIB, else
// the dynamic loader's libibverbs.so.1.
std::string verbs_library_in_use(const Options& options);

// Whether `library` is vroce (it exports vroce's private counters symbol).
bool is_vroce_library(const std::string& library);

}  // namespace roce::bench
