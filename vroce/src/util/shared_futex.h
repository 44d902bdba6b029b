// Waiting on and waking a 32-bit word in memory that two processes share: Linux's futex on a
// MAP_SHARED mapping (no FUTEX_PRIVATE_FLAG, so the kernel keys the word by its page, not by the
// address space). Used by the GPU copy channel (gpu/copier_protocol.h).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>

namespace vroce {

// Sleeps while *word == expected, for at most timeout_ns (0: no limit). Returns on a wake-up, a
// changed word, a signal or the timeout; callers re-check the word.
inline void shared_futex_wait(std::atomic<uint32_t>* word, uint32_t expected,
                              uint64_t timeout_ns) noexcept {
  timespec limit{static_cast<time_t>(timeout_ns / 1000000000),
                 static_cast<long>(timeout_ns % 1000000000)};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected,
            timeout_ns == 0 ? nullptr : &limit, nullptr, 0);
}

inline void shared_futex_wake(std::atomic<uint32_t>* word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

}  // namespace vroce
