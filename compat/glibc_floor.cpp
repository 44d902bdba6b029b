// Keeps the shipped shared libraries loadable on glibc 2.34 although Debian 12 builds them
// against glibc 2.36.
//
// libstdc++.a's random.o (std::random_device) references arc4random, which glibc added in 2.36.
// We never use std::random_device in a shipped library, but random.o is pulled in anyway:
// stdexcept.o needs cow-string-inst.o, which holds the old-ABI random_device::_M_init and so
// needs random.o. Left alone, the reference becomes an import of arc4random@GLIBC_2.36 and the
// dynamic loader refuses the whole library on older glibc ("version `GLIBC_2.36' not found").
// This definition is hidden (the version scripts export nothing but our entry points), so the
// static libstdc++ binds to it at link time and no import is recorded.
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace {

// Fills `out` from `source` until done or a permanent failure; retries interrupted calls.
template <typename Source>
bool fill(unsigned char* out, size_t size, Source source) {
  size_t done = 0;
  while (done < size) {
    const ssize_t got = source(out + done, size - done);
    if (got > 0) {
      done += static_cast<size_t>(got);
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

bool from_getrandom(unsigned char* out, size_t size) {
  return fill(out, size, [](unsigned char* p, size_t n) { return getrandom(p, n, 0); });
}

// For kernels without getrandom (before 3.17) or a seccomp profile that refuses it.
bool from_urandom(unsigned char* out, size_t size) {
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  const bool ok = fill(out, size, [fd](unsigned char* p, size_t n) { return read(fd, p, n); });
  close(fd);
  return ok;
}

}  // namespace

// Same contract as glibc's: 32 random bits from the kernel, no error return. glibc aborts when
// the kernel gives no entropy at all, and so do we: a random_device that returned a fixed value
// would be a silent downgrade.
extern "C" uint32_t arc4random(void) noexcept {
  const int saved_errno = errno;
  uint32_t value = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(&value);
  if (!from_getrandom(bytes, sizeof value) && !from_urandom(bytes, sizeof value)) {
    static const char kMessage[] =
        "fatal: arc4random: neither getrandom(2) nor /dev/urandom gives entropy; allow getrandom "
        "in the container's seccomp profile or mount /dev/urandom\n";
    [[maybe_unused]] const ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    std::abort();
  }
  errno = saved_errno;
  return value;
}
