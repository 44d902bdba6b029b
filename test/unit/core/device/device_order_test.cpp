// Device order by PCI path (NCCL_IB_DEVICE_PCI_ORDER) and net_ib's real port for the functions
// of one PCI device: pure functions over PluginDevice, no verbs.
#include "core/device/device_order.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

using roce::PluginDevice;

namespace {

PluginDevice device(const std::string& name, int port, const char* pci) {
  PluginDevice d;
  d.name = name;
  d.ibv_name = name;
  d.port = port;
  if (pci != nullptr) {
    d.pci_path = pci;
  }
  return d;
}

std::vector<std::string> names(const std::vector<PluginDevice>& devices) {
  std::vector<std::string> out;
  for (const auto& d : devices) {
    out.push_back(d.name);
  }
  return out;
}

}  // namespace

TEST_CASE("a PCI function's path names its PCI device without the function digit", "[order]") {
  CHECK(roce::pci_device_of("/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1") ==
        "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00");
  CHECK(roce::pci_device_of("/sys/devices/pci0000:00") == "/sys/devices/pci0000:00");
}

TEST_CASE("devices are ordered by PCI path then port, whatever order the list had", "[order]") {
  const std::vector<PluginDevice> listed = {
      device("rocep59s0f1", 1, "/sys/devices/pci0000:3a/0000:3b:00.1"),
      device("nopci", 1, nullptr),
      device("roceP2p1s0f0", 1, "/sys/devices/pci0000:80/0000:81:00.0"),
      device("rocep59s0f0", 1, "/sys/devices/pci0000:3a/0000:3b:00.0"),
  };
  const std::vector<std::string> expected = {"rocep59s0f0", "rocep59s0f1", "roceP2p1s0f0", "nopci"};
  std::vector<PluginDevice> order = listed;
  roce::sort_by_pci_path(order);
  CHECK(names(order) == expected);
  // Every permutation of the list gives the same order.
  std::vector<size_t> perm = {0, 1, 2, 3};
  do {
    std::vector<PluginDevice> shuffled;
    for (size_t i : perm) {
      shuffled.push_back(listed[i]);
    }
    roce::sort_by_pci_path(shuffled);
    CHECK(names(shuffled) == expected);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST_CASE("the functions of one PCI device get distinct reported ports", "[order]") {
  std::vector<PluginDevice> devices = {
      device("mlx5_0", 1, "/sys/devices/pci0000:3a/0000:3b:00.0"),
      device("mlx5_1", 1, "/sys/devices/pci0000:3a/0000:3b:00.1"),
      device("mlx5_2", 1, "/sys/devices/pci0000:80/0000:81:00.0"),
  };
  // A verbs device with two ports: its ports already differ, they do not count for each other.
  PluginDevice second_port = device("mlx5_3", 2, "/sys/devices/pci0000:90/0000:91:00.0");
  devices.push_back(device("mlx5_3", 1, "/sys/devices/pci0000:90/0000:91:00.0"));
  devices.push_back(second_port);
  roce::assign_real_ports(devices);
  CHECK(devices[0].port + devices[0].real_port == 1);
  CHECK(devices[1].port + devices[1].real_port == 2);  // net_ib: port + realPort
  CHECK(devices[2].port + devices[2].real_port == 1);
  CHECK(devices[3].port + devices[3].real_port == 1);
  CHECK(devices[4].port + devices[4].real_port == 2);
}

TEST_CASE("pciPath is folded as net_ib folds it: the function digit, and virtual functions",
          "[order]") {
  const std::string root = "/sys/devices/pci0000:3a/0000:3a:00.0/";
  CHECK(roce::fold_pci_path(root + "0000:3b:00.1", false) == root + "0000:3b:00.0");
  CHECK(roce::fold_pci_path(root + "0000:3b:00.1", true) == root + "0000:3b:00.0");
  // A virtual function (device 02, function 3) folds onto its card only with NCCL_IB_MERGE_VFS.
  CHECK(roce::fold_pci_path(root + "0000:3b:02.3", false) == root + "0000:3b:02.0");
  CHECK(roce::fold_pci_path(root + "0000:3b:02.3", true) == root + "0000:3b:00.0");
  // Not a PCI address: left alone rather than corrupted.
  CHECK(roce::fold_pci_path("/sys/devices/virtual/net/x1", true) == "/sys/devices/virtual/net/x1");
  CHECK(roce::fold_pci_path("", true).empty());
}

TEST_CASE("both functions of a dual-port card report one pciPath unless NCCL_IB_MERGE_NICS=0",
          "[order]") {
  std::vector<PluginDevice> devices = {
      device("mlx5_0", 1, "/sys/devices/pci0000:3a/0000:3b:00.0"),
      device("mlx5_1", 1, "/sys/devices/pci0000:3a/0000:3b:00.1"),
      device("mlx5_2", 1, "/sys/devices/pci0000:3a/0000:3b:01.2"),  // a VF of the same card
      device("nopci", 1, nullptr),
  };
  roce::assign_reported_pci_paths(devices, true, true);
  CHECK(devices[0].reported_pci_path == "/sys/devices/pci0000:3a/0000:3b:00.0");
  CHECK(devices[1].reported_pci_path == "/sys/devices/pci0000:3a/0000:3b:00.0");
  CHECK(devices[2].reported_pci_path == "/sys/devices/pci0000:3a/0000:3b:00.0");
  CHECK_FALSE(devices[3].reported_pci_path.has_value());
  roce::assign_real_ports(devices, true);
  CHECK(devices[2].real_port == 2);  // net_ib counts the VF too
  roce::assign_real_ports(devices, false);
  CHECK(devices[2].real_port == 0);

  roce::assign_reported_pci_paths(devices, true, false);
  CHECK(devices[1].reported_pci_path == "/sys/devices/pci0000:3a/0000:3b:00.0");
  CHECK(devices[2].reported_pci_path == "/sys/devices/pci0000:3a/0000:3b:01.0");

  roce::assign_reported_pci_paths(devices, false, true);
  CHECK(devices[0].reported_pci_path == "/sys/devices/pci0000:3a/0000:3b:00.0");
  CHECK(devices[1].reported_pci_path == "/sys/devices/pci0000:3a/0000:3b:00.1");
  CHECK(devices[2].reported_pci_path == "/sys/devices/pci0000:3a/0000:3b:01.2");
}
