// Which log records are emitted: NCCL_DEBUG and NCCL_DEBUG_SUBSYS parsed with NCCL's rules, so a
// record the plugin drops is one NCCL would have dropped too. Pure, so it is unit-tested.
#pragma once

#include "nccl_net/types.h"

namespace roce::log {

// NCCL's default subsystem mask when NCCL_DEBUG_SUBSYS is unset.
inline constexpr unsigned long kDefaultSubsysMask = NCCL_INIT | NCCL_BOOTSTRAP | NCCL_ENV;

struct Filter {
  int level = NCCL_LOG_WARN;  // records up to this ncclDebugLogLevel pass
  unsigned long mask = kDefaultSubsysMask;
};

// nccl_debug/nccl_debug_subsys: the variables' values, nullptr when unset. With an NCCL logger
// installed (forwarding), WARN always passes: NCCL keeps the last WARN for ncclGetLastError()
// even when it prints nothing. Without one (stderr), an unset NCCL_DEBUG means WARN.
Filter parse_filter(const char* nccl_debug, const char* nccl_debug_subsys,
                    bool forwarding) noexcept;

// WARN ignores the subsystem mask, as NCCL's own WARN (flags NCCL_ALL) does.
constexpr bool passes(const Filter& filter, ncclDebugLogLevel level, unsigned long subsys) {
  if (level == NCCL_LOG_NONE || static_cast<int>(level) > filter.level) {
    return false;
  }
  return level == NCCL_LOG_WARN || (subsys & filter.mask) != 0;
}

}  // namespace roce::log
