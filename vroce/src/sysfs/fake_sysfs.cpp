// Writer of the fake sysfs tree; see fake_sysfs.h for the layout and the EINVAL emulation.
#include "sysfs/fake_sysfs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "device/limits.h"
#include "sysfs/port_counter_files.h"

namespace vroce::sysfs {
namespace {

std::string temp_name(const std::string& path) {
  return path + ".vroce-tmp." + std::to_string(getpid()) + "." +
         std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
}

// Writes content into a fresh temporary file beside path; its name.
Result<std::string> write_temp(const std::string& path, const std::string& content) {
  std::string temp = temp_name(path);
  FILE* file = std::fopen(temp.c_str(), "w");
  if (file == nullptr) {
    return failure("cannot create " + temp + ": " + std::strerror(errno));
  }
  bool written = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  if (std::fclose(file) != 0 || !written) {
    std::string why = "cannot write " + temp + ": " + std::strerror(errno);
    unlink(temp.c_str());
    return failure(std::move(why));
  }
  return temp;
}

class TreeWriter {
 public:
  explicit TreeWriter(std::vector<std::string>* errors) : errors_(errors) {}

  std::vector<std::string>* errors() noexcept { return errors_; }

  bool make_dirs(const std::string& path) {
    for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
      std::string prefix = path.substr(0, slash);
      if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        fail("cannot create directory " + prefix);
        return false;
      }
      if (slash == std::string::npos) {
        return true;
      }
    }
  }

  // Replaces path atomically: other processes reading the tree never see a partial file.
  void write_file(const std::string& path, const std::string& content) {
    if (Status replaced = replace_file(path, content); !replaced && errors_->empty()) {
      errors_->push_back(replaced.error());
    }
  }

  void remove_file(const std::string& path) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      fail("cannot remove " + path);
    }
  }

  void write_link(const std::string& path, const std::string& target) {
    std::string temp = temp_name(path);
    if (symlink(target.c_str(), temp.c_str()) != 0) {
      fail("cannot create the link " + temp + " -> " + target);
      return;
    }
    commit(temp, path);
  }

 private:
  void commit(const std::string& temp, const std::string& path) {
    if (rename(temp.c_str(), path.c_str()) != 0) {
      fail("cannot rename " + temp + " to " + path);
      unlink(temp.c_str());
    }
  }

  void fail(const std::string& what) {
    // One message per tree is enough to act on; more would only repeat the cause.
    if (errors_->empty()) {
      errors_->push_back(what + ": " + std::strerror(errno));
    }
  }

  std::vector<std::string>* errors_;
};

std::string hex4(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%04x", value);
  return text;
}

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) {
    return "localhost";
  }
  return name;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path.front() == '/') {
    return path;
  }
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) {
    return path;
  }
  return std::string(cwd) + "/" + path;
}

std::string fake_sysfs_base(const std::string& root) {
  std::string base = absolute(root);
  while (base.size() > 1 && base.back() == '/') {
    base.pop_back();
  }
  return base;
}

// dir: <root>/devices/pci0000:00/<address>.
void write_pci_function(TreeWriter& out, const std::string& root, const std::string& dir) {
  if (!out.make_dirs(dir) || !out.make_dirs(root + "/bus/pci")) {
    return;
  }
  // As the kernel links every PCI function to its bus: NCCL's topology takes a NIC whose path
  // has no subsystem link ending in "pci" for a virtual one and hangs it off the CPU, where
  // NCCL 2.28 cannot place a virtual NIC fused from two of them (no PCI parent to put it under:
  // "Could not find any local path from gpu 0 to net").
  out.write_link(dir + "/subsystem", "../../../bus/pci");
  out.write_file(dir + "/vendor", hex4(device::limits::kPciVendor) + "\n");
  out.write_file(dir + "/device", hex4(device::limits::kPciDevice) + "\n");
  char klass[16];
  std::snprintf(klass, sizeof(klass), "0x%06x", device::limits::kPciClass);
  out.write_file(dir + "/class", std::string(klass) + "\n");
  out.write_file(dir + "/subsystem_vendor", hex4(device::limits::kPciVendor) + "\n");
  out.write_file(dir + "/subsystem_device", hex4(device::limits::kPciDevice) + "\n");
  out.write_file(dir + "/numa_node", "-1\n");
  // A PCIe Gen5 x16 slot, what a 400G NIC sits in.
  out.write_file(dir + "/max_link_speed", "32.0 GT/s PCIe\n");
  out.write_file(dir + "/max_link_width", "16\n");
  out.write_file(dir + "/current_link_speed", "32.0 GT/s PCIe\n");
  out.write_file(dir + "/current_link_width", "16\n");
}

void write_port(TreeWriter& out, const std::string& dir, device::Device& device) {
  if (!out.make_dirs(dir + "/gids") || !out.make_dirs(dir + "/gid_attrs/types") ||
      !out.make_dirs(dir + "/gid_attrs/ndevs") || !out.make_dirs(dir + "/pkeys")) {
    return;
  }
  ibv_port_attr port = device.port_attr();
  bool active = port.state == IBV_PORT_ACTIVE;
  out.write_file(dir + "/state", active ? "4: ACTIVE\n" : "1: DOWN\n");
  out.write_file(dir + "/phys_state", active ? "5: LinkUp\n" : "3: Disabled\n");
  out.write_file(dir + "/rate",
                 sysfs_rate_text(*device::port_speed_for_gbps(device.port_speed_gbps())) + "\n");
  out.write_file(dir + "/link_layer", "Ethernet\n");
  out.write_file(dir + "/lid", "0x0\n");
  out.write_file(dir + "/sm_lid", "0x0\n");
  out.write_file(dir + "/sm_sl", "0\n");
  out.write_file(dir + "/lid_mask_count", "0\n");
  char cap_mask[16];
  std::snprintf(cap_mask, sizeof(cap_mask), "0x%08x", port.port_cap_flags);
  out.write_file(dir + "/cap_mask", std::string(cap_mask) + "\n");
  out.write_file(dir + "/pkeys/0", "0xffff\n");
  create_port_counter_files(dir, out.errors());
  std::span<const device::GidEntry> gids = device.gids();
  for (size_t i = 0; i < gids.size(); ++i) {
    std::string index = std::to_string(i);
    out.write_file(dir + "/gids/" + index, sysfs_gid_text(gids[i].gid) + "\n");
    if (gids[i].valid) {
      out.write_file(dir + "/gid_attrs/types/" + index, sysfs_gid_type_text(gids[i].type) + "\n");
      out.write_file(dir + "/gid_attrs/ndevs/" + index, device.netdev() + "\n");
    } else {
      out.write_link(dir + "/gid_attrs/types/" + index, kEinvalAttribute);
      out.write_link(dir + "/gid_attrs/ndevs/" + index, kEinvalAttribute);
    }
  }
}

void write_device(TreeWriter& out, const std::string& root, device::Device& device,
                  const Config& cfg) {
  std::string dir = root + "/class/infiniband/" + device.name();
  std::string pci =
      root + "/devices/pci0000:00/" + fake_pci_address(device.pci_slot(), device.pci_function());
  if (!out.make_dirs(dir)) {
    return;
  }
  write_pci_function(out, root, pci);
  const ibv_device_attr& attr = device.device_attr();
  out.write_file(dir + "/node_type", "1: CA\n");
  out.write_file(dir + "/node_guid", sysfs_guid_text(attr.node_guid) + "\n");
  out.write_file(dir + "/sys_image_guid", sysfs_guid_text(attr.sys_image_guid) + "\n");
  out.write_file(dir + "/fw_ver", std::string(attr.fw_ver) + "\n");
  out.write_file(dir + "/hca_type", std::string(device::limits::kHcaType) + "\n");
  out.write_file(dir + "/hw_rev", "0x" + std::to_string(attr.hw_ver) + "\n");
  out.write_file(dir + "/board_id", std::string(device::limits::kBoardId) + "\n");
  out.write_file(dir + "/node_desc", hostname() + " " + device.name() + "\n");
  out.write_link(dir + "/device", pci);
  write_port(out, dir + "/ports/1", device);
  if (cfg.tc_override) {
    if (out.make_dirs(dir + "/tc/1")) {
      // mlx5's format for a host-wide override (echo 106 > .../tc/1/traffic_class).
      out.write_file(dir + "/tc/1/traffic_class",
                     "Global tclass=" + std::to_string(*cfg.tc_override) + "\n");
    }
  } else {
    // A tree reused from a run with an override must not keep claiming one.
    out.remove_file(dir + "/tc/1/traffic_class");
  }

  std::string uverbs = root + "/class/infiniband_verbs/uverbs" + std::to_string(device.index());
  if (!out.make_dirs(uverbs)) {
    return;
  }
  out.write_file(uverbs + "/ibdev", device.name() + "\n");
  out.write_file(uverbs + "/abi_version", "1\n");
  // 231 is the uverbs character major; minors start at 192.
  out.write_file(uverbs + "/dev", "231:" + std::to_string(192 + device.index()) + "\n");
  out.write_link(uverbs + "/device", pci);
}

}  // namespace

Status replace_file(const std::string& path, const std::string& content) {
  Result<std::string> temp = write_temp(path, content);
  if (!temp) {
    return failure(temp.error());
  }
  if (rename(temp->c_str(), path.c_str()) != 0) {
    std::string why = "cannot rename " + *temp + " to " + path + ": " + std::strerror(errno);
    unlink(temp->c_str());
    return failure(std::move(why));
  }
  return {};
}

Status create_file_if_absent(const std::string& path, const std::string& content) {
  Result<std::string> temp = write_temp(path, content);
  if (!temp) {
    return failure(temp.error());
  }
  // link(2) fails on an existing name, so a file another process keeps is never replaced.
  Status created;
  if (link(temp->c_str(), path.c_str()) != 0 && errno != EEXIST) {
    created = failure("cannot create " + path + ": " + std::strerror(errno));
  }
  unlink(temp->c_str());
  return created;
}

std::string fake_sysfs_port_dir(const std::string& root, const std::string& device_name) {
  return fake_sysfs_base(root) + "/class/infiniband/" + device_name + "/ports/1";
}

std::string sysfs_gid_text(const ibv_gid& gid) {
  char text[48];
  int at = 0;
  for (int i = 0; i < 16; i += 2) {
    at += std::snprintf(text + at, sizeof(text) - static_cast<size_t>(at), "%s%02x%02x",
                        i == 0 ? "" : ":", gid.raw[i], gid.raw[i + 1]);
  }
  return text;
}

std::string sysfs_guid_text(uint64_t guid_be) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&guid_be);
  char text[24];
  std::snprintf(text, sizeof(text), "%02x%02x:%02x%02x:%02x%02x:%02x%02x", bytes[0], bytes[1],
                bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]);
  return text;
}

std::string sysfs_rate_text(const device::PortSpeed& speed) {
  return std::to_string(speed.lanes * speed.lane_gbps) + " Gb/sec (" + std::to_string(speed.lanes) +
         "X " + speed.speed_name + ")";
}

std::string sysfs_gid_type_text(ibv_gid_type type) {
  return type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : "IB/RoCE v1";
}

std::string fake_pci_address(int device_index, int function) {
  // One bus per device, as separate NICs in separate slots: NCCL merges devices whose PCI paths
  // differ only in the function digit, which must not happen to independent vroce devices. The
  // functions of one adapter (VROCE_PCI_FUNCTIONS) share their first device's bus.
  char text[24];
  std::snprintf(text, sizeof(text), "%04x:%02x:00.%d", device_index / 128,
                0x80 + device_index % 128, function & 7);
  return text;
}

std::vector<std::string> write_fake_sysfs(const std::string& root,
                                          std::span<device::Device* const> devices,
                                          const Config& cfg) {
  std::vector<std::string> errors;
  TreeWriter out(&errors);
  std::string base = fake_sysfs_base(root);
  if (!out.make_dirs(base + "/class/infiniband") ||
      !out.make_dirs(base + "/class/infiniband_verbs")) {
    return errors;
  }
  out.write_file(base + "/class/infiniband_verbs/abi_version", "6\n");
  for (device::Device* device : devices) {
    write_device(out, base, *device, cfg);
  }
  return errors;
}

}  // namespace vroce::sysfs
