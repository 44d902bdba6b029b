// Entering the devices' network namespace: see device_netns.h.
#include "device/device_netns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/log.h"

namespace vroce::device {
namespace {

constexpr const char* kThreadNetns = "/proc/thread-self/ns/net";

struct Home {
  int fd = -1;  // kept for the process (never closed: devices live until exit)
  ino_t inode = 0;
  dev_t dev = 0;
};

Home& home() {
  static Home instance;
  return instance;
}

}  // namespace

void remember_device_netns() noexcept {
  Home& h = home();
  if (h.fd >= 0) {
    return;
  }
  int fd = ::open(kThreadNetns, O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    // No /proc: every thread is taken to be in the devices' namespace.
    if (fd >= 0) {
      ::close(fd);
    }
    return;
  }
  h.fd = fd;
  h.inode = st.st_ino;
  h.dev = st.st_dev;
}

InDeviceNetns::InDeviceNetns() noexcept {
  const Home& h = home();
  if (h.fd < 0) {
    return;
  }
  struct stat st {};
  if (::stat(kThreadNetns, &st) == 0 && st.st_ino == h.inode && st.st_dev == h.dev) {
    return;
  }
  return_fd_ = ::open(kThreadNetns, O_RDONLY | O_CLOEXEC);
  if (return_fd_ < 0 || ::setns(h.fd, CLONE_NEWNET) != 0) {
    const int err = errno;
    if (return_fd_ >= 0) {
      ::close(return_fd_);
      return_fd_ = -1;
    }
    ok_ = false;
    try {
      error_ = std::string(
                   "this thread is in another network namespace than the vroce devices "
                   "and cannot enter theirs (setns: ") +
               std::strerror(err) +
               "); list the devices from the namespace the thread runs in, or give the process "
               "CAP_SYS_ADMIN";
    } catch (...) {
    }
  }
}

InDeviceNetns::~InDeviceNetns() {
  if (return_fd_ >= 0) {
    if (::setns(return_fd_, CLONE_NEWNET) != 0) {
      VROCE_LOG(Error, "cannot return to the thread's network namespace: %s", std::strerror(errno));
    }
    ::close(return_fd_);
  }
}

}  // namespace vroce::device
