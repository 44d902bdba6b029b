// Adapters for the data path: isend, irecv, iflush, test, irecvConsumed. The checks here are a
// handful of compares; they run before the core so that the core sees only sizes within
// kMaxMessageBytes (the maxP2pBytes we report) and n within 1..kMaxRecvs. isend, irecv and test
// call the core's noexcept entry points (core/datapath/api_data_path.h) with no exception barrier:
// nothing can be thrown there, which the static_asserts below prove, and a barrier's closure cost
// more instructions per message than any check here.
#include <cstddef>
#include <type_traits>

#include "abi/adapters.h"
#include "abi/guard.h"
#include "core/api.h"
#include "core/datapath/api_data_path.h"
#include "core/datapath/data_path_limits.h"

namespace roce::abi {
namespace {

// The checks are inlined into each ncclNet_vN entry point: they are a handful of compares, and a
// call per layer cost more than the checks themselves (callgrind, bench-callgrind.sh).

// Logs a size out of range: `what` is "size" (index < 0) or "sizes" (element `index`).
template <typename Size>
[[gnu::cold, gnu::noinline]] ncclResult_t bad_size(const char* entry, const char* what, int index,
                                                   Size size) noexcept {
  bool negative = false;
  if constexpr (std::is_signed_v<Size>) {
    negative = size < 0;
  }
  if (negative) {
    return index < 0 ? invalid_argument(entry, "{} {} is negative", what, size)
                     : invalid_argument(entry, "{}[{}] {} is negative", what, index, size);
  }
  constexpr const char* kTooLarge = "exceeds maxP2pBytes";
  return index < 0 ? invalid_argument(entry, "{} {} {} {} reported by getProperties", what, size,
                                      kTooLarge, kMaxMessageBytes)
                   : invalid_argument(entry, "{}[{}] {} {} {} reported by getProperties", what,
                                      index, size, kTooLarge, kMaxMessageBytes);
}

// Size: NCCL's type for a size (int up to v8, size_t from v9); an int may be negative.
template <typename Size>
[[gnu::always_inline]] inline bool size_in_range(Size size) noexcept {
  if constexpr (std::is_signed_v<Size>) {
    if (size < 0) {
      return false;
    }
  }
  return static_cast<size_t>(size) <= kMaxMessageBytes;
}

template <typename Size>
[[gnu::always_inline]] inline ncclResult_t isend_checked(void* send_comm, void* data, Size size,
                                                         int tag, void* mhandle, void* phandle,
                                                         void** request) noexcept {
  clear(request);
  if (send_comm == nullptr || request == nullptr) {
    return invalid_argument("isend", "{} is NULL", send_comm == nullptr ? "sendComm" : "request");
  }
  if (!size_in_range(size)) [[unlikely]] {
    return bad_size("isend", "size", -1, size);
  }
  if (size > 0 && (data == nullptr || mhandle == nullptr)) {
    return invalid_argument("isend", "{} is NULL for a {}-byte send",
                            data == nullptr ? "data" : "mhandle", size);
  }
  static_assert(noexcept(api::isend(send_comm, data, 0, tag, mhandle, phandle, request)));
  return api::isend(send_comm, data, static_cast<size_t>(size), tag, mhandle, phandle, request);
}

// Checks what every irecv version shares; *request is already cleared.
[[gnu::always_inline]] inline ncclResult_t check_recv_arrays(const char* entry, int n, void** data,
                                                             const void* sizes, int* tags,
                                                             void** mhandles) noexcept {
  if (n < 1 || n > kMaxRecvs) {
    return invalid_argument(entry, "n {} is outside 1..maxRecvs ({})", n, kMaxRecvs);
  }
  if (data == nullptr || sizes == nullptr || tags == nullptr || mhandles == nullptr) {
    return invalid_argument(entry, "{} array is NULL",
                            data == nullptr    ? "data"
                            : sizes == nullptr ? "sizes"
                            : tags == nullptr  ? "tags"
                                               : "mhandles");
  }
  return ncclSuccess;
}

template <typename Size>
[[gnu::always_inline]] inline ncclResult_t irecv_checked(void* recv_comm, int n, void** data,
                                                         Size* sizes, int* tags, void** mhandles,
                                                         void** phandles, void** request) noexcept {
  clear(request);
  if (recv_comm == nullptr || request == nullptr) {
    return invalid_argument("irecv", "{} is NULL", recv_comm == nullptr ? "recvComm" : "request");
  }
  if (ncclResult_t r = check_recv_arrays("irecv", n, data, sizes, tags, mhandles);
      r != ncclSuccess) {
    return r;
  }
  const auto check_buffer = [&](int i) noexcept -> ncclResult_t {
    if (sizes[i] != 0) [[likely]] {
      if (!size_in_range(sizes[i])) [[unlikely]] {
        return bad_size("irecv", "sizes", i, sizes[i]);
      }
      if (data[i] == nullptr || mhandles[i] == nullptr) {
        return invalid_argument("irecv", "{}[{}] is NULL for a {}-byte receive",
                                data[i] == nullptr ? "data" : "mhandles", i, sizes[i]);
      }
    }
    return ncclSuccess;
  };
  // A receive of one buffer (NCCL's common case) without the loop, which costs it a few
  // instructions per message.
  if (n == 1) [[likely]] {
    if (ncclResult_t r = check_buffer(0); r != ncclSuccess) {
      return r;
    }
  } else {
    for (int i = 0; i < n; ++i) {
      if (ncclResult_t r = check_buffer(i); r != ncclSuccess) {
        return r;
      }
    }
  }
  static_assert(noexcept(api::irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request)));
  return api::irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
}

}  // namespace

ncclResult_t isend_v8(void* send_comm, void* data, int size, int tag, void* mhandle,
                      void** request) noexcept {
  return isend_checked(send_comm, data, size, tag, mhandle, nullptr, request);
}

ncclResult_t isend_v9(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                      void** request) noexcept {
  return isend_checked(send_comm, data, size, tag, mhandle, nullptr, request);
}

ncclResult_t isend_v10(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                       void* phandle, void** request) noexcept {
  return isend_checked(send_comm, data, size, tag, mhandle, phandle, request);
}

ncclResult_t irecv_v8(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles,
                      void** request) noexcept {
  return irecv_checked(recv_comm, n, data, sizes, tags, mhandles, nullptr, request);
}

ncclResult_t irecv_v9(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                      void** mhandles, void** request) noexcept {
  return irecv_checked(recv_comm, n, data, sizes, tags, mhandles, nullptr, request);
}

ncclResult_t irecv_v10(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                       void** mhandles, void** phandles, void** request) noexcept {
  return irecv_checked(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
}

ncclResult_t iflush_v8(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                       void** request) noexcept {
  clear(request);
  if (recv_comm == nullptr || request == nullptr) {
    return invalid_argument("iflush", "{} is NULL", recv_comm == nullptr ? "recvComm" : "request");
  }
  if (n < 1 || n > kMaxRecvs) {
    return invalid_argument("iflush", "n {} is outside 1..maxRecvs ({})", n, kMaxRecvs);
  }
  if (data == nullptr || sizes == nullptr || mhandles == nullptr) {
    return invalid_argument("iflush", "{} array is NULL",
                            data == nullptr    ? "data"
                            : sizes == nullptr ? "sizes"
                                               : "mhandles");
  }
  return guarded("iflush",
                 [&] { return api::iflush(recv_comm, n, data, sizes, mhandles, request); });
}

ncclResult_t test_v8(void* request, int* done, int* sizes) noexcept {
  if (request == nullptr || done == nullptr) {
    return invalid_argument("test", "{} is NULL", request == nullptr ? "request" : "done");
  }
  *done = 0;
  static_assert(noexcept(api::test(request, done, sizes)));
  return api::test(request, done, sizes);
}

ncclResult_t irecv_consumed_v8(void* recv_comm, int n, void* request) noexcept {
  if (recv_comm == nullptr) {
    return invalid_argument("irecvConsumed", "recvComm is NULL");
  }
  return guarded("irecvConsumed", [&] { return api::irecv_consumed(recv_comm, n, request); });
}

}  // namespace roce::abi
