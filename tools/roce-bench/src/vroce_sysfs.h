// --vroce-sysfs: vroce's fake sysfs tree seen as /sys/class by a rank, for plugins that read
// sysfs themselves (NCCL's IB transport reads /sys/class/infiniband/<dev>/... during init and
// fails without it). The launcher has vroce write each rank's tree (VROCE_SYSFS_ROOT, with the
// rank's one device) before the rank starts; the rank's child process then enters a private
// mount namespace and overlays the tree onto /sys/class, read-only, with the real /sys/class
// underneath (docs/vroce.md, "Reading it as /sys"). Needs CAP_SYS_ADMIN (root) and overlayfs.
#pragma once

#include <string>

namespace roce::bench {

// Writes vroce's tree for `vroce_devices` (one VROCE_DEVICES list) under `root` by enumerating
// the devices of `ibverbs_lib` in a child process, without the port counter files (no rank keeps
// them current). Throws BenchError when no tree appears.
void write_vroce_sysfs(const std::string& root, const std::string& vroce_devices,
                       const std::string& ibverbs_lib);

// In a single-threaded process (a freshly forked child, or a rank started by hand before it
// starts a thread): a private mount namespace with root/class over /sys/class, and
// VROCE_SYSFS_ROOT unset (the tree is written; the rank's vroce must not rewrite it). Returns ""
// on success, else what failed and how to fix it.
std::string enter_vroce_sysfs(const std::string& root);

// A new temporary folder for the trees (/tmp/roce-bench-sysfs.XXXXXX), removed with everything
// in it when this goes, on every way out. Throws BenchError when it cannot be made.
class VroceSysfsFolder {
 public:
  VroceSysfsFolder();
  ~VroceSysfsFolder();
  VroceSysfsFolder(const VroceSysfsFolder&) = delete;
  VroceSysfsFolder& operator=(const VroceSysfsFolder&) = delete;
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// A rank started by hand (cluster mode, --rank) has no launcher to set up its tree: this writes
// the tree of the rank's own VROCE_DEVICES into a new folder and enters it. Construct it before
// anything starts a thread. Throws BenchError naming the cause; removes the folder when done.
class OwnVroceSysfs {
 public:
  OwnVroceSysfs(const std::string& vroce_devices, const std::string& ibverbs_lib);

 private:
  VroceSysfsFolder folder_;
};

}  // namespace roce::bench
