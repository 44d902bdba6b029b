// The eventfd that wakes the progress thread from epoll_wait, with a flag that spares a write
// (a system call) per kick while a wake-up is already pending. The flag may be cleared only
// after the counter is drained: cleared first, a wake() in between writes, the drain swallows
// that write, and the flag stays set with the counter at zero, so every later wake() skips its
// write and the sleeping thread is never woken again.
#pragma once

#include <atomic>
#include <functional>

namespace vroce::packet_io {

class WakeFd {
 public:
  WakeFd() = default;
  WakeFd(const WakeFd&) = delete;
  WakeFd& operator=(const WakeFd&) = delete;
  ~WakeFd();

  // Creates the (non-blocking) eventfd; errno on failure.
  int open();
  int fd() const noexcept { return fd_; }

  // Makes the fd readable unless a wake-up is already pending. Any thread.
  void wake() noexcept;

  // The woken thread, after epoll reported the fd readable: drains it and re-enables wake().
  // A wake() that lands between the drain and the re-enable writes nothing; the caller is awake
  // and about to look at what that waker left (kick_pending_, active QPs), so nothing is lost.
  // `between` runs between the two steps (tests force that interleaving with it).
  void consume(const std::function<void()>& between = {}) noexcept;

 private:
  int fd_ = -1;
  std::atomic<bool> signalled_{false};
};

}  // namespace vroce::packet_io
