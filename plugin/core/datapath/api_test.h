// api::test, inline: NCCL calls test() far more often than anything else (every poll that finds
// nothing is one), so the dispatch from a request to its comm costs no call of its own. Only
// abi/'s test adapter and api.cpp include this; everything else sees the declaration in api.h.
#pragma once

#include "core/api.h"
#include "core/datapath/recv_comm.h"
#include "core/datapath/request.h"
#include "core/datapath/send_comm.h"

namespace roce::api {

// Logs that `request` is not a request in flight. Returns ncclInvalidArgument.
[[gnu::cold]] ncclResult_t not_in_flight(void* request) noexcept;

inline ncclResult_t test(void* request, int* done, int* sizes) {
  auto* header = static_cast<RequestHeader*>(request);
  if (header->magic != RequestHeader::kMagic || header->state == RequestState::Free) [[unlikely]] {
    return not_in_flight(request);
  }
  switch (header->kind) {
    case RequestKind::Send:
      return static_cast<SendComm*>(header->comm)
          ->test(*static_cast<SendRequest*>(header), done, sizes);
    case RequestKind::Recv:
      return static_cast<RecvComm*>(header->comm)
          ->test(*static_cast<RecvRequest*>(header), done, sizes);
    case RequestKind::Flush:
      return static_cast<RecvComm*>(header->comm)->test(*static_cast<FlushRequest*>(header), done);
  }
  return ncclInternalError;
}

}  // namespace roce::api
