// sysfs readers over fixture trees shaped like the kernel's.
#include "core/device/sysfs.h"

#include <catch2/catch.hpp>

#include "fixture_tree.h"

using namespace roce;
using roce::test::FixtureTree;

namespace {

// /sys/devices/pci0000:00/0000:00:02.0/0000:3b:00.0 with the subsystem link a real tree has,
// and /sys/class/infiniband/mlx5_0/device pointing at it.
void add_pci_device(const FixtureTree& tree, const std::string& ibdev, const std::string& bdf) {
  const std::string function = "devices/pci0000:00/0000:00:02.0/" + bdf;
  tree.mkdir(function);
  tree.write(function + "/vendor", "0x15b3\n");
  tree.mkdir("bus/pci");
  tree.link(function + "/subsystem", tree.path("bus/pci"));
  tree.link("class/infiniband/" + ibdev + "/device", tree.path(function));
}

}  // namespace

TEST_CASE("pciPath is the realpath of the device link when it is a PCI function", "[sysfs]") {
  FixtureTree tree;
  add_pci_device(tree, "mlx5_0", "0000:3b:00.0");
  const sysfs::PciPath pci = sysfs::resolve_pci_path(tree.root(), "mlx5_0");
  REQUIRE(pci.path.has_value());
  CHECK(*pci.path == tree.path("devices/pci0000:00/0000:00:02.0/0000:3b:00.0"));
}

TEST_CASE("pciPath accepts five-digit PCI domains (VMD) and trees without subsystem links",
          "[sysfs]") {
  FixtureTree tree;
  tree.mkdir("devices/pci10000:00/10000:01:00.1");
  tree.write("devices/pci10000:00/10000:01:00.1/vendor", "0x15b3\n");
  tree.link("class/infiniband/mlx5_1/device", "../../../devices/pci10000:00/10000:01:00.1");
  const sysfs::PciPath pci = sysfs::resolve_pci_path(tree.root(), "mlx5_1");
  REQUIRE(pci.path.has_value());
  CHECK(pci.path->ends_with("/10000:01:00.1"));
}

TEST_CASE("pciPath is absent, with a reason, when the link is missing or not PCI", "[sysfs]") {
  FixtureTree tree;
  SECTION("no such device directory") {
    const auto pci = sysfs::resolve_pci_path(tree.root(), "vroce0");
    CHECK_FALSE(pci.path.has_value());
    CHECK(pci.reason.find("does not resolve") != std::string::npos);
  }
  SECTION("the link leads to a virtual device") {
    tree.mkdir("devices/virtual/net/eth0");
    tree.link("class/infiniband/rxe0/device", tree.path("devices/virtual/net/eth0"));
    const auto pci = sysfs::resolve_pci_path(tree.root(), "rxe0");
    CHECK_FALSE(pci.path.has_value());
    CHECK(pci.reason.find("not a PCI function") != std::string::npos);
  }
  SECTION("a PCI-looking name whose subsystem is another bus") {
    tree.mkdir("devices/platform/0000:00:01.0");
    tree.mkdir("bus/platform");
    tree.link("devices/platform/0000:00:01.0/subsystem", tree.path("bus/platform"));
    tree.link("class/infiniband/odd0/device", tree.path("devices/platform/0000:00:01.0"));
    const auto pci = sysfs::resolve_pci_path(tree.root(), "odd0");
    CHECK_FALSE(pci.path.has_value());
    CHECK(pci.reason.find("not the PCI bus") != std::string::npos);
  }
  SECTION("a dangling link") {
    tree.link("class/infiniband/gone0/device", tree.path("devices/pci0000:00/0000:99:00.0"));
    CHECK_FALSE(sysfs::resolve_pci_path(tree.root(), "gone0").path.has_value());
  }
}

TEST_CASE("GID type files are parsed as the kernel writes them", "[sysfs]") {
  CHECK(sysfs::parse_gid_type("RoCE v2\n") == GidType::RoceV2);
  CHECK(sysfs::parse_gid_type("RoCE v1\n") == GidType::RoceV1);
  CHECK(sysfs::parse_gid_type("IB/RoCE v1\n") == GidType::RoceV1);
  CHECK(sysfs::parse_gid_type("") == GidType::Unknown);
  CHECK(sysfs::parse_gid_type("RoCE v3\n") == GidType::Unknown);
}

TEST_CASE("GID types are read per index; missing or unreadable files are Unknown", "[sysfs]") {
  FixtureTree tree;
  const std::string types = "class/infiniband/mlx5_0/ports/1/gid_attrs/types/";
  tree.write(types + "0", "IB/RoCE v1\n");
  tree.write(types + "1", "RoCE v2\n");
  tree.mkdir(types + "2");  // reading a directory fails (EISDIR), like EINVAL on unused slots
  CHECK(sysfs::read_gid_type(tree.root(), "mlx5_0", 1, 0) == GidType::RoceV1);
  CHECK(sysfs::read_gid_type(tree.root(), "mlx5_0", 1, 1) == GidType::RoceV2);
  CHECK(sysfs::read_gid_type(tree.root(), "mlx5_0", 1, 2) == GidType::Unknown);
  CHECK(sysfs::read_gid_type(tree.root(), "mlx5_0", 1, 3) == GidType::Unknown);
  CHECK(sysfs::read_gid_type(tree.root(), "mlx5_0", 2, 1) == GidType::Unknown);
}

TEST_CASE("read_attribute reports the errno of a failed read", "[sysfs]") {
  FixtureTree tree;
  tree.write("a", "x\n");
  int err = -1;
  CHECK(sysfs::read_attribute(tree.path("a"), &err) == std::optional<std::string>("x\n"));
  CHECK(err == 0);
  CHECK_FALSE(sysfs::read_attribute(tree.path("missing"), &err).has_value());
  CHECK(err == ENOENT);
}
