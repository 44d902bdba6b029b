#include "packet_io/wake_fd.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace vroce::packet_io {

WakeFd::~WakeFd() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

int WakeFd::open() {
  fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return fd_ < 0 ? errno : 0;
}

void WakeFd::wake() noexcept {
  if (!signalled_.exchange(true, std::memory_order_acq_rel)) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof(one));
  }
}

void WakeFd::consume(const std::function<void()>& between) noexcept {
  uint64_t value;
  [[maybe_unused]] ssize_t r = ::read(fd_, &value, sizeof(value));
  if (between) {
    between();
  }
  signalled_.store(false, std::memory_order_seq_cst);
}

}  // namespace vroce::packet_io
