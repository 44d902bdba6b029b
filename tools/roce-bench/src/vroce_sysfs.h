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

// In a freshly forked, single-threaded child: a private mount namespace with root/class over
// /sys/class. Returns "" on success, else what failed and how to fix it.
std::string enter_vroce_sysfs(const std::string& root);

// A rank started by hand (cluster mode, --rank) has no launcher to do the above for it: this
// writes the tree of the rank's own VROCE_DEVICES into a new temporary folder and enters it.
// Construct it before anything starts a thread (a mount namespace is per thread group only
// while there is one thread). Throws BenchError naming the cause; removes the folder when done.
class OwnVroceSysfs {
 public:
  OwnVroceSysfs(const std::string& vroce_devices, const std::string& ibverbs_lib);
  ~OwnVroceSysfs();
  OwnVroceSysfs(const OwnVroceSysfs&) = delete;
  OwnVroceSysfs& operator=(const OwnVroceSysfs&) = delete;

 private:
  std::string dir_;
};

}  // namespace roce::bench
