// What a work-completion status means for NCCL and for the operator: the ncclResult_t it becomes
// (ncclRemoteError when the peer or the path is at fault, ncclSystemError for local faults), its
// name as rdma-core spells it, and a hint naming the likely cause and the fix. Pure.
#pragma once

#include <string_view>

#include "nccl_net/types.h"

namespace roce {

struct CompletionStatusInfo {
  std::string_view name;  // "IBV_WC_RETRY_EXC_ERR"
  ncclResult_t result;    // ncclSuccess for IBV_WC_SUCCESS
  std::string_view hint;  // one line for the operator; empty for success
};

// `status` is an ibv_wc_status value; unknown values map to ncclSystemError with a generic hint.
CompletionStatusInfo completion_status_info(int status) noexcept;

}  // namespace roce
