// What every ncclNet adapter shares: argument checks that log one WARN naming the entry point,
// the argument and what NCCL should have passed; and the exception barrier that turns anything
// thrown below into an ncclResult_t (std::bad_alloc -> ncclSystemError, anything else ->
// ncclInternalError), so no exception ever crosses into NCCL.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <new>
#include <utility>

#include "nccl_net/types.h"
#include "util/cancellation.h"
#include "util/log.h"

namespace roce::abi {

// Clears an out-parameter before anything can fail, so every return leaves it defined (NCCL may
// have stored its (void*)0x1 hint in *request; NULL means "not posted").
inline void clear(void** out) noexcept {
  if (out != nullptr) {
    *out = nullptr;
  }
}

// Logs an argument error and returns ncclInvalidArgument. Cold and out of line: the data path's
// adapters check their arguments on every call, and a formatting call inlined there would cost
// each of them a stack frame.
template <typename... Args>
[[gnu::cold, gnu::noinline]] ncclResult_t invalid_argument(const char* entry,
                                                           fmt::format_string<Args...> format,
                                                           Args&&... args) noexcept {
  try {
    ROCE_WARN(NCCL_NET, "{}: invalid argument: {}", entry,
              fmt::format(format, std::forward<Args>(args)...));
  } catch (...) {
    ROCE_WARN(NCCL_NET, "{}: invalid argument", entry);
  }
  return ncclInvalidArgument;
}

// Runs body() and maps exceptions to results, with one WARN. Cancellation of the calling thread
// is held off for the call (util/cancellation.h): a forced unwind must neither be swallowed by
// the catch (...) below nor meet this noexcept barrier, and the setup and teardown paths it
// guards block in socket calls and close descriptors, all cancellation points. The thread is
// cancelled once it is back in NCCL.
template <typename Body>
ncclResult_t guarded(const char* entry, Body&& body) noexcept {
  const CancellationHeldOff held_off;
  try {
    return std::forward<Body>(body)();
  } catch (const std::bad_alloc&) {
    ROCE_WARN(NCCL_NET, "{}: out of memory", entry);
    return ncclSystemError;
  } catch (const std::exception& e) {
    ROCE_WARN(NCCL_NET, "{}: {}", entry, e.what());
    return ncclInternalError;
  } catch (...) {
    ROCE_WARN(NCCL_NET, "{}: unexpected exception", entry);
    return ncclInternalError;
  }
}

}  // namespace roce::abi
