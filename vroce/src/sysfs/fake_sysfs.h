// The fake sysfs tree (VROCE_SYSFS_ROOT=<dir>): what the kernel would show under
// /sys/class/infiniband and /sys/class/infiniband_verbs for vroce's devices, written once at
// first device enumeration so that code reading sysfs (NCCL's GID-type and PCI-path lookups,
// cat, scripts) sees vroce's devices. A test overlays <dir>/class onto /sys/class in a private
// mount namespace; the plugin can read it directly through its sysfs-root setting.
//
// Layout (the kernel's, <dev> a directory rather than a link into /sys/devices):
//   <dir>/class/infiniband/<dev>/{node_type,node_guid,sys_image_guid,fw_ver,hca_type,hw_rev,
//                                 board_id,node_desc}
//   <dir>/class/infiniband/<dev>/ports/1/{state,phys_state,rate,link_layer,lid,sm_lid,sm_sl,
//                                 lid_mask_count,cap_mask,gids/<i>,pkeys/0,
//                                 gid_attrs/types/<i>,gid_attrs/ndevs/<i>}
//   <dir>/class/infiniband/<dev>/ports/1/{hw_counters,counters}/<name> (sysfs/port_counter_files.h)
//   <dir>/class/infiniband/<dev>/device -> <dir>/devices/pci0000:00/0000:BB:00.F (absolute; F
//                                 is 0 but for the functions of one adapter, VROCE_PCI_FUNCTIONS)
//   <dir>/class/infiniband/<dev>/tc/1/traffic_class  (only with VROCE_TC_OVERRIDE; removed
//                                                     when a later run has none)
//   <dir>/class/infiniband_verbs/{abi_version,uverbsN/{ibdev,abi_version,dev,device}}
//   <dir>/devices/pci0000:00/0000:BB:00.0/{vendor,device,class,subsystem_vendor,...}
//
// The kernel answers a read of gid_attrs/types/<i> or ndevs/<i> for an unused GID slot with
// EINVAL, and NCCL skips a slot only on exactly that error (an open failure is fatal to it). A
// regular file cannot fail a read, so an unused slot's file is a symbolic link to
// /sys/class/net/lo/speed, a real sysfs attribute that fails every read with EINVAL (lo has no
// link speed). Where /sys is not mounted the link dangles and the read fails with ENOENT.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "device/device.h"
#include "device/port_rules.h"
#include "util/result.h"

namespace vroce::sysfs {

// Target of the links that stand for unused GID slots.
inline constexpr const char* kEinvalAttribute = "/sys/class/net/lo/speed";

// Writes (or refreshes) the tree for these devices. Every file is replaced atomically, so
// processes sharing a root see complete files. Returns one message per failure (empty on
// success); a failure leaves the devices usable, only the tree incomplete.
std::vector<std::string> write_fake_sysfs(const std::string& root,
                                          std::span<device::Device* const> devices,
                                          const Config& cfg);

// The kernel's text forms, exposed for tests.
std::string sysfs_gid_text(const ibv_gid& gid);               // "fe80:0000:...:0001"
std::string sysfs_guid_text(uint64_t guid_be);                // "0202:03ff:fe04:0506"
std::string sysfs_rate_text(const device::PortSpeed& speed);  // "400 Gb/sec (4X NDR)"
std::string sysfs_gid_type_text(ibv_gid_type type);           // "RoCE v2" or "IB/RoCE v1"
// "0000:80:00.0" for device 0; function: the digit after the dot (VROCE_PCI_FUNCTIONS).
std::string fake_pci_address(int device_index, int function = 0);

// <root made absolute, without trailing slashes>/class/infiniband/<device>/ports/1
std::string fake_sysfs_port_dir(const std::string& root, const std::string& device_name);

// Replaces path with content atomically (a temporary file renamed over it), or says why not.
Status replace_file(const std::string& path, const std::string& content);
// Creates path with content unless it exists, atomically, or says why not.
Status create_file_if_absent(const std::string& path, const std::string& content);

}  // namespace vroce::sysfs
