// The words NCCL_DEBUG and NCCL_DEBUG_SUBSYS accept, each with the log level or subsystem flag it
// names (NCCL's documented values). The plugin's log filter and roce-bench's logger both read
// them from here; how each treats an unknown word is its own choice.
#pragma once

#include "nccl_net/types.h"

namespace nccl_debug_names {

struct Name {
  const char* name;
  unsigned long value;
};

inline constexpr Name kLevels[] = {
    {"VERSION", NCCL_LOG_VERSION}, {"WARN", NCCL_LOG_WARN},   {"INFO", NCCL_LOG_INFO},
    {"ABORT", NCCL_LOG_ABORT},     {"TRACE", NCCL_LOG_TRACE},
};

inline constexpr Name kSubsystems[] = {
    {"INIT", NCCL_INIT},
    {"COLL", NCCL_COLL},
    {"P2P", NCCL_P2P},
    {"SHM", NCCL_SHM},
    {"NET", NCCL_NET},
    {"GRAPH", NCCL_GRAPH},
    {"TUNING", NCCL_TUNING},
    {"ENV", NCCL_ENV},
    {"ALLOC", NCCL_ALLOC},
    {"CALL", NCCL_CALL},
    {"PROXY", NCCL_PROXY},
    {"NVLS", NCCL_NVLS},
    {"BOOTSTRAP", NCCL_BOOTSTRAP},
    {"REG", NCCL_REG},
    {"PROFILE", NCCL_PROFILE},
    {"RAS", NCCL_RAS},
    {"ALL", static_cast<unsigned long>(NCCL_ALL)},
};

}  // namespace nccl_debug_names
