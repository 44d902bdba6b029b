// ibv_get_sysfs_path and ibv_read_sysfs_file, with rdma-core's semantics: the file's content
// with one trailing newline removed and NUL-terminated, the byte count returned, -1 with errno
// on failure (including content that does not fit with its terminator).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "abi/export.h"
#include "abi/private_decls.h"
#include "util/sysfs_path.h"

VROCE_EXPORT const char* ibv_get_sysfs_path(void) {
  return vroce::sysfs_mount_path();
}

VROCE_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  if (dir == nullptr || file == nullptr || buf == nullptr) {
    errno = EINVAL;
    return -1;
  }
  std::string path;
  try {
    path = std::string(dir) + "/" + file;
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return -1;
  }
  ssize_t length = read(fd, buf, size);
  int saved = errno;
  close(fd);
  if (length < 0) {
    errno = saved;
    return -1;
  }
  if (length > 0) {
    auto used = static_cast<size_t>(length);
    if (buf[used - 1] == '\n') {
      buf[used - 1] = '\0';
      --length;
    } else if (used < size) {
      buf[used] = '\0';
    } else {
      errno = EOVERFLOW;  // no room for the terminator: the caller's buffer is too small
      return -1;
    }
  }
  return static_cast<int>(length);
}
