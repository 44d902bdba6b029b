// vroce's sysfs tree as /sys/class in a rank's own mount namespace.
#include "vroce_sysfs.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "errors.h"

namespace roce::bench {

void write_vroce_sysfs(const std::string& root, const std::string& vroce_devices,
                       const std::string& ibverbs_lib) {
  const pid_t pid = fork();
  if (pid < 0) {
    throw BenchError(std::string("--vroce-sysfs: fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // vroce writes the tree at the first device enumeration of a process.
    setenv("VROCE_SYSFS_ROOT", root.c_str(), 1);
    setenv("VROCE_DEVICES", vroce_devices.c_str(), 1);
    void* library = dlopen(ibverbs_lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      _exit(3);
    }
    using GetList = void** (*)(int*);
    using FreeList = void (*)(void**);
    auto get_list = reinterpret_cast<GetList>(dlsym(library, "ibv_get_device_list"));
    auto free_list = reinterpret_cast<FreeList>(dlsym(library, "ibv_free_device_list"));
    if (get_list == nullptr || free_list == nullptr) {
      _exit(4);
    }
    int count = 0;
    void** list = get_list(&count);
    if (list != nullptr) {
      free_list(list);
    }
    _exit(count > 0 ? 0 : 5);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  struct stat st {};
  const std::string tree = root + "/class/infiniband";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || stat(tree.c_str(), &st) != 0) {
    throw BenchError("--vroce-sysfs: " + ibverbs_lib + " wrote no sysfs tree under " + root +
                     " for VROCE_DEVICES=" + vroce_devices +
                     " (is it vroce? only vroce writes a fake sysfs)");
  }
  // The ranks' vroce does not write into the tree (it is mounted read-only under them), so its
  // port counters would stay at 0 and read as "no loss or congestion": leave them out, and the
  // plugin says at init that they are not readable.
  std::error_code ignored;
  for (const auto& device : std::filesystem::directory_iterator(tree, ignored)) {
    for (const auto& port : std::filesystem::directory_iterator(device.path() / "ports", ignored)) {
      std::filesystem::remove_all(port.path() / "hw_counters", ignored);
      std::filesystem::remove_all(port.path() / "counters", ignored);
    }
  }
}

std::string enter_vroce_sysfs(const std::string& root) {
  if (unshare(CLONE_NEWNS) != 0) {
    return std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno) +
           " (a private mount namespace needs CAP_SYS_ADMIN: run as root, or drop --vroce-sysfs)";
  }
  // Keep the overlay to this namespace: nothing propagates back to the host's /sys.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("making / private in the new mount namespace: ") + std::strerror(errno);
  }
  const std::string options = "lowerdir=" + root + "/class:/sys/class";
  if (mount("vroce-sysfs", "/sys/class", "overlay", MS_RDONLY, options.c_str()) != 0) {
    return std::string("mount -t overlay -o ") + options + " /sys/class: " + std::strerror(errno) +
           " (the kernel needs overlayfs)";
  }
  unsetenv("VROCE_SYSFS_ROOT");
  return "";
}

VroceSysfsFolder::VroceSysfsFolder() {
  char dir[] = "/tmp/roce-bench-sysfs.XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    throw BenchError(std::string("--vroce-sysfs: mkdtemp: ") + std::strerror(errno));
  }
  path_ = dir;
}

VroceSysfsFolder::~VroceSysfsFolder() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

OwnVroceSysfs::OwnVroceSysfs(const std::string& vroce_devices, const std::string& ibverbs_lib) {
  const std::string root = folder_.path() + "/rank";
  write_vroce_sysfs(root, vroce_devices, ibverbs_lib);
  if (const std::string error = enter_vroce_sysfs(root); !error.empty()) {
    throw BenchError("--vroce-sysfs: " + error);
  }
}

}  // namespace roce::bench
