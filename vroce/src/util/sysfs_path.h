// Where sysfs is mounted, as rdma-core decides it: $SYSFS_PATH without trailing slashes, else
// /sys. ibv_get_sysfs_path() returns it and the device paths in ibv_device are built on it, so a
// program (or test) can point verbs at another tree the way it would with rdma-core.
#pragma once

namespace vroce {

const char* sysfs_mount_path() noexcept;

}  // namespace vroce
