// The fake sysfs writer, in-process: the files, their kernel formats, the EINVAL stand-ins for
// unused GID slots, and refreshing a reused tree. (fake_sysfs_test.py reads the same tree through
// an overlay mount at /sys/class, as NCCL-style code would.)
#include "sysfs/fake_sysfs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "device/netdev.h"
#include "result_checks.h"
#include "test_addresses.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// Reads like NCCL does: open, read, and report errno on failure (0 on success).
int read_errno(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    return errno;
  }
  char buf[16];
  ssize_t n = read(fd, buf, sizeof(buf));
  int saved = errno;
  close(fd);
  return n < 0 ? saved : 0;
}

// The sysfs text of the IPv4-mapped GID of `address`, as the kernel writes it.
std::string mapped_gid_text(const std::string& address) {
  in_addr ip{};
  REQUIRE(inet_pton(AF_INET, address.c_str(), &ip) == 1);
  const uint32_t v = ntohl(ip.s_addr);
  char text[64];
  std::snprintf(text, sizeof text, "0000:0000:0000:0000:0000:ffff:%04x:%04x\n", v >> 16,
                v & 0xffff);
  return text;
}

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/vp-fake-sysfs-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    path_ = name;
  }
  ~TempDir() {
    std::error_code ignored;  // a leftover temporary folder is no test failure
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::unique_ptr<vroce::device::Device> make_device(const char* name, const char* address,
                                                   int index) {
  return roce::test::value_of(vroce::device::Device::create({name, address}, index, 400,
                                                            vroce::device::read_interface_table()));
}

}  // namespace

TEST_CASE("kernel text forms", "[sysfs]") {
  ibv_gid gid{};
  gid.raw[0] = 0xfe;
  gid.raw[1] = 0x80;
  gid.raw[15] = 0x01;
  CHECK(vroce::sysfs::sysfs_gid_text(gid) == "fe80:0000:0000:0000:0000:0000:0000:0001");
  uint64_t guid = vroce::device::guid_from_mac({0x02, 0x11, 0x22, 0x33, 0x44, 0x55});
  CHECK(vroce::sysfs::sysfs_guid_text(guid) == "0011:22ff:fe33:4455");
  CHECK(vroce::sysfs::sysfs_rate_text(*vroce::device::port_speed_for_gbps(400)) ==
        "400 Gb/sec (4X NDR)");
  CHECK(vroce::sysfs::sysfs_rate_text(*vroce::device::port_speed_for_gbps(800)) ==
        "800 Gb/sec (8X NDR)");
  CHECK(vroce::sysfs::sysfs_rate_text(*vroce::device::port_speed_for_gbps(100)) ==
        "100 Gb/sec (4X EDR)");
  CHECK(vroce::sysfs::sysfs_gid_type_text(IBV_GID_TYPE_ROCE_V2) == "RoCE v2");
  CHECK(vroce::sysfs::sysfs_gid_type_text(IBV_GID_TYPE_ROCE_V1) == "IB/RoCE v1");
  CHECK(vroce::sysfs::fake_pci_address(0) == "0000:80:00.0");
  CHECK(vroce::sysfs::fake_pci_address(3) == "0000:83:00.0");
  CHECK(vroce::sysfs::fake_pci_address(130) == "0001:82:00.0");
  CHECK(vroce::sysfs::fake_pci_address(3, 1) == "0000:83:00.1");
}

TEST_CASE("the tree holds what the kernel shows for a RoCE device", "[sysfs]") {
  TempDir root;
  auto dev0 = make_device("vps0", test_address(0).c_str(), 0);
  auto dev1 = make_device("vps1", test_address(1).c_str(), 1);
  std::vector<vroce::device::Device*> devices{dev0.get(), dev1.get()};
  vroce::Config config;
  config.tc_override = 106;
  std::vector<std::string> errors = vroce::sysfs::write_fake_sysfs(root.path(), devices, config);
  INFO((errors.empty() ? "" : errors.front()));
  REQUIRE(errors.empty());

  std::string ib = root.path() + "/class/infiniband/vps1";
  CHECK(read_file(ib + "/node_type") == "1: CA\n");
  CHECK(read_file(ib + "/node_guid") == vroce::sysfs::sysfs_guid_text(dev1->node_guid()) + "\n");
  CHECK(read_file(ib + "/sys_image_guid") ==
        vroce::sysfs::sysfs_guid_text(dev1->node_guid()) + "\n");
  CHECK(read_file(ib + "/fw_ver") == "1.0.0 (vroce)\n");
  CHECK(read_file(ib + "/board_id") == "VROCE_0000000001\n");
  std::string port = ib + "/ports/1";
  CHECK(read_file(port + "/state") == "4: ACTIVE\n");
  CHECK(read_file(port + "/phys_state") == "5: LinkUp\n");
  CHECK(read_file(port + "/rate") == "400 Gb/sec (4X NDR)\n");
  CHECK(read_file(port + "/link_layer") == "Ethernet\n");
  CHECK(read_file(port + "/lid") == "0x0\n");
  CHECK(read_file(port + "/cap_mask") == "0x04010000\n");
  CHECK(read_file(port + "/pkeys/0") == "0xffff\n");
  CHECK(read_file(port + "/gids/3") == mapped_gid_text(test_address(1)));
  CHECK(read_file(port + "/gids/15") == "0000:0000:0000:0000:0000:0000:0000:0000\n");
  CHECK(read_file(port + "/gid_attrs/types/2") == "IB/RoCE v1\n");
  // 0/1: the default GID fe80::<EUI-64>, v1 and v2, as on a ConnectX.
  CHECK(read_file(port + "/gids/0").rfind("fe80:0000:0000:0000:", 0) == 0);
  CHECK(read_file(port + "/gids/1") == read_file(port + "/gids/0"));
  CHECK(read_file(port + "/gid_attrs/types/0") == "IB/RoCE v1\n");
  CHECK(read_file(port + "/gid_attrs/types/1") == "RoCE v2\n");
  CHECK(read_file(port + "/gid_attrs/ndevs/0") == dev1->netdev() + "\n");
  CHECK(read_file(port + "/gid_attrs/types/3") == "RoCE v2\n");
  CHECK(read_file(port + "/gid_attrs/ndevs/3") == dev1->netdev() + "\n");
  CHECK(read_errno(port + "/gid_attrs/types/3") == 0);
  // Unused slots read as the kernel's do: EINVAL, which NCCL takes as "skip this index".
  CHECK(read_errno(port + "/gid_attrs/types/4") == EINVAL);
  CHECK(read_errno(port + "/gid_attrs/ndevs/15") == EINVAL);
  CHECK(read_file(ib + "/tc/1/traffic_class") == "Global tclass=106\n");

  char resolved[PATH_MAX];
  REQUIRE(realpath((ib + "/device").c_str(), resolved) != nullptr);
  std::string pci(resolved);
  CHECK(pci.substr(pci.rfind('/') + 1) == "0000:81:00.0");
  CHECK(read_file(pci + "/vendor") == "0x0000\n");
  CHECK(read_file(pci + "/device") == "0x12b7\n");
  CHECK(read_file(pci + "/class") == "0x020000\n");
  // Its bus, as NCCL's topology reads it: <pci path>/subsystem resolves to a folder named pci.
  REQUIRE(realpath((pci + "/subsystem").c_str(), resolved) != nullptr);
  CHECK(std::string(resolved) == root.path() + "/bus/pci");

  std::string uverbs = root.path() + "/class/infiniband_verbs/uverbs1";
  CHECK(read_file(uverbs + "/ibdev") == "vps1\n");
  CHECK(read_file(root.path() + "/class/infiniband_verbs/abi_version") == "6\n");
  CHECK(read_file(root.path() + "/class/infiniband/vps0/ports/1/gids/3") ==
        mapped_gid_text(test_address(0)));

  // Rewriting the same root without an override drops the stale override file.
  config.tc_override.reset();
  REQUIRE(vroce::sysfs::write_fake_sysfs(root.path(), devices, config).empty());
  struct stat st {};
  CHECK(stat((ib + "/tc/1/traffic_class").c_str(), &st) == -1);
  CHECK(read_file(port + "/gid_attrs/types/3") == "RoCE v2\n");
}

// VROCE_PCI_FUNCTIONS: a dual-port adapter is two devices on one bus, functions .0 and .1,
// with one sys_image_guid, as a ConnectX in Ethernet mode shows its ports.
TEST_CASE("two devices placed as functions .0 and .1 of one PCI device", "[sysfs]") {
  TempDir root;
  auto dev0 = make_device("vpf0", test_address(0).c_str(), 0);
  auto dev1 = make_device("vpf1", test_address(1).c_str(), 1);
  auto alone = make_device("vpf2", test_address(2).c_str(), 2);
  dev0->place_on_pci_device(0, 0, dev0->node_guid());
  dev1->place_on_pci_device(0, 1, dev0->node_guid());
  std::vector<vroce::device::Device*> devices{dev0.get(), dev1.get(), alone.get()};
  REQUIRE(vroce::sysfs::write_fake_sysfs(root.path(), devices, vroce::Config{}).empty());

  auto pci_of = [&](const char* name) {
    char resolved[PATH_MAX];
    const std::string link = root.path() + "/class/infiniband/" + name + "/device";
    REQUIRE(realpath(link.c_str(), resolved) != nullptr);
    return std::string(resolved);
  };
  const std::string f0 = pci_of("vpf0");
  const std::string f1 = pci_of("vpf1");
  CHECK(f0.ends_with("/pci0000:00/0000:80:00.0"));
  CHECK(f1.ends_with("/pci0000:00/0000:80:00.1"));
  CHECK(pci_of("vpf2").ends_with("/pci0000:00/0000:82:00.0"));  // a card of its own
  CHECK(read_file(f1 + "/vendor") == read_file(f0 + "/vendor"));
  const std::string guid = vroce::sysfs::sysfs_guid_text(dev0->node_guid()) + "\n";
  CHECK(read_file(root.path() + "/class/infiniband/vpf0/sys_image_guid") == guid);
  CHECK(read_file(root.path() + "/class/infiniband/vpf1/sys_image_guid") == guid);
  CHECK(read_file(root.path() + "/class/infiniband/vpf1/node_guid") ==
        vroce::sysfs::sysfs_guid_text(dev1->node_guid()) + "\n");
  CHECK(dev1->device_attr().sys_image_guid == dev0->node_guid());
}

TEST_CASE("an unwritable root is reported, not fatal", "[sysfs]") {
  auto dev = make_device("vps0", test_address(0).c_str(), 0);
  std::vector<vroce::device::Device*> devices{dev.get()};
  std::vector<std::string> errors =
      vroce::sysfs::write_fake_sysfs("/proc/vp-not-writable/sys", devices, vroce::Config{});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("cannot create directory /proc/vp-not-writable") != std::string::npos);
}
