// The data path's entry points, inline: isend, irecv and test. NCCL's proxy thread calls them
// millions of times a second (every poll that finds nothing is a test()), so the way from the
// ncclNet_vN adapter to the comm costs no call of its own: abi/ inlines these into each adapter,
// which then makes one call, into the comm. All are noexcept, and so is everything they call:
// the data path allocates nothing and throws nothing, which is why abi/ needs no exception
// barrier around them (it static_asserts that they are noexcept). Only abi/'s data adapters
// include this.
#pragma once

#include <cstddef>

#include "core/comm.h"
#include "core/datapath/recv_comm.h"
#include "core/datapath/request.h"
#include "core/datapath/send_comm.h"
#include "core/memory/mr_handle.h"
#include "nccl_net/types.h"

namespace roce::api {

// Cold: log that `handle` is not a live comm of the kind `entry` needs, or that `request` is not
// a request in flight. Each returns ncclInvalidArgument.
[[gnu::cold]] ncclResult_t not_a_comm(const char* entry, const char* what,
                                      const void* handle) noexcept;
[[gnu::cold]] ncclResult_t not_in_flight(void* request) noexcept;

// Sizes are already checked against the limits by abi/. phandle(s): NCCL's profiler handles
// (v10+), or nullptr. *request is set (nullptr: cannot post now, try again).
inline ncclResult_t isend(void* handle, void* data, size_t size, int tag, void* mhandle,
                          void* phandle, void** request) noexcept {
  Comm* comm = Comm::from_handle(handle, CommKind::Send);
  if (comm == nullptr) [[unlikely]] {
    return not_a_comm("isend", "send comm", handle);
  }
  auto* send = static_cast<SendComm*>(comm);
  const CtsEntry* begun = nullptr;
  if (!send->matching_multi_receive()) {
    begun = send->begun_cts_slot();
    if (begun == nullptr) {
      return send->wait_for_cts();  // the peer has not received yet: NCCL calls again
    }
  }
  return send->isend(data, size, tag, static_cast<MrHandle*>(mhandle), phandle, request, begun);
}

// Size: NCCL's element type for the sizes array (int up to v8, size_t from v9).
template <typename Size>
inline ncclResult_t irecv(void* handle, int n, void** data, const Size* sizes, const int* tags,
                          void** mhandles, void** phandles, void** request) noexcept {
  Comm* comm = Comm::from_handle(handle, CommKind::Recv);
  if (comm == nullptr) [[unlikely]] {
    return not_a_comm("irecv", "recv comm", handle);
  }
  return static_cast<RecvComm*>(comm)->irecv(n, data, sizes, tags, mhandles, phandles, request);
}

inline ncclResult_t test(void* request, int* done, int* sizes) noexcept {
  auto* header = static_cast<RequestHeader*>(request);
  if (header->magic != RequestHeader::kMagic || header->state == RequestState::Free) [[unlikely]] {
    return not_in_flight(request);
  }
  // Sends and receives first, one compare each: most calls are tests of those that find nothing.
  if (header->kind == RequestKind::Send) {
    return static_cast<SendComm*>(header->comm)
        ->test(*static_cast<SendRequest*>(header), done, sizes);
  }
  if (header->kind == RequestKind::Recv) {
    return static_cast<RecvComm*>(header->comm)
        ->test(*static_cast<RecvRequest*>(header), done, sizes);
  }
  if (header->kind == RequestKind::Flush) {
    return static_cast<RecvComm*>(header->comm)->test(*static_cast<FlushRequest*>(header), done);
  }
  return ncclInternalError;
}

}  // namespace roce::api
