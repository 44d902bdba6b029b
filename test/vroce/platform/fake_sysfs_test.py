#!/usr/bin/env python3
"""The fake sysfs tree (VROCE_SYSFS_ROOT), as programs that read sysfs see it.

A vroce process (Debian's ibv_devices) writes the tree at first device enumeration. The test
then overlays <root>/class onto /sys/class in a private mount namespace (read-only, two lower
layers, the live /sys/class underneath) and reads it there the way NCCL-style code does: cat,
open/read with errno (unused GID slots must fail with EINVAL), realpath of the PCI link, and
Debian's ibv_devinfo, whose board_id line comes from ibdev_path (/sys/class/infiniband/<dev>)
through ibv_read_sysfs_file. Devices use the first two
loopback addresses with_test_addresses claimed for this run (ROCE_TEST_ADDRESSES).
Exit 0 on success, 1 on a failed check, 77 (skip) without root, unshare or ibverbs-utils.
"""
import argparse
import ipaddress
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from hang_bound import HANG_BOUND_S  # noqa: E402  (one bound for every suite)
from test_addresses import test_addresses  # noqa: E402

SKIP = 77
failures = []

# Runs inside the private mount namespace: reads every path NCCL-style code would and prints
# one "path<TAB>result" line per read, result being the content or "errno=<n>".
READER = r"""
import os, sys
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.read(fd, 64).decode().rstrip("\n")
        finally:
            os.close(fd)
        print(f"{path}\t{data}")
    except OSError as error:
        print(f"{path}\terrno={error.errno}")
print("realpath\t" + os.path.realpath("/sys/class/infiniband/vps0/device"))
print("net-live\t" + str(os.path.isdir("/sys/class/net/lo")))
"""


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}")


ADDR = test_addresses()


def mapped_gid(address):
    """The sysfs text of an IPv4-mapped GID, as the kernel writes it."""
    return ipaddress.IPv6Address("::ffff:" + address).exploded


def environment(lib_dir, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VROCE_")}
    env.pop("SYSFS_PATH", None)
    env["LD_LIBRARY_PATH"] = str(lib_dir)
    env["VROCE_DEVICES"] = f"vps0={ADDR[0]},vps1={ADDR[1]}"
    env.update(extra)
    return env


def in_private_mounts(root, command, env):
    """Runs command with <root>/class overlaid onto /sys/class, in a private mount namespace."""
    script = ("mount --make-rprivate / && "
              f"mount -t overlay vp-sysfs -o ro,lowerdir={root}/class:/sys/class /sys/class && "
              'exec "$@"')
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *command],
                          capture_output=True, text=True, env=env, timeout=HANG_BOUND_S)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib-dir", required=True)
    args = parser.parse_args()
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("SKIP: needs root and unshare (util-linux) for a private overlay mount")
        return SKIP
    if shutil.which("ibv_devinfo") is None or shutil.which("ibv_devices") is None:
        print("SKIP: needs ibverbs-utils")
        return SKIP
    lib_dir = Path(args.lib_dir).resolve()

    with tempfile.TemporaryDirectory(prefix="vp-sysfs-") as root:
        # First enumeration writes the tree (with the traffic-class override shown).
        listing = subprocess.run(["ibv_devices"], capture_output=True, text=True, timeout=HANG_BOUND_S,
                                 env=environment(lib_dir, VROCE_SYSFS_ROOT=root,
                                                 VROCE_TC_OVERRIDE="106"))
        check(listing.returncode == 0, f"ibv_devices with VROCE_SYSFS_ROOT: {listing.stderr}")
        guid = next(line.split()[1] for line in listing.stdout.splitlines()
                    if line.strip().startswith("vps0"))
        guid_text = ":".join(guid[i:i + 4] for i in range(0, 16, 4))

        ib = "/sys/class/infiniband/vps0"
        port = f"{ib}/ports/1"
        expected = {
            f"{ib}/node_type": "1: CA",
            f"{ib}/node_guid": guid_text,
            f"{ib}/fw_ver": "1.0.0 (vroce)",
            f"{ib}/board_id": "VROCE_0000000001",
            f"{ib}/tc/1/traffic_class": "Global tclass=106",
            f"{port}/state": "4: ACTIVE",
            f"{port}/phys_state": "5: LinkUp",
            f"{port}/rate": "400 Gb/sec (4X NDR)",
            f"{port}/link_layer": "Ethernet",
            # 0/1: the default GID fe80::<EUI-64>, whose interface ID is the node GUID.
            f"{port}/gids/0": "fe80:0000:0000:0000:" + guid_text,
            f"{port}/gids/1": "fe80:0000:0000:0000:" + guid_text,
            f"{port}/gids/3": mapped_gid(ADDR[0]),
            f"{port}/gid_attrs/types/0": "IB/RoCE v1",
            f"{port}/gid_attrs/types/1": "RoCE v2",
            f"{port}/gid_attrs/types/2": "IB/RoCE v1",
            f"{port}/gid_attrs/types/3": "RoCE v2",
            f"{port}/gid_attrs/ndevs/3": "lo",
            "/sys/class/infiniband/vps1/ports/1/gids/3": mapped_gid(ADDR[1]),
            "/sys/class/infiniband_verbs/uverbs0/ibdev": "vps0",
            "/sys/class/infiniband_verbs/uverbs1/ibdev": "vps1",
        }
        # NCCL scans every slot; an unused one must fail its read with EINVAL (22).
        for index in range(4, 16):
            expected[f"{port}/gid_attrs/types/{index}"] = "errno=22"
            expected[f"{port}/gid_attrs/ndevs/{index}"] = "errno=22"

        read = in_private_mounts(root, [sys.executable, "-c", READER, *expected],
                                 environment(lib_dir))
        if read.returncode != 0:
            print(f"SKIP: cannot overlay-mount /sys/class here: {read.stderr.strip()}")
            return SKIP
        seen = dict(line.split("\t", 1) for line in read.stdout.splitlines())
        for path, value in expected.items():
            check(seen.get(path) == value, f"{path}: expected {value!r}, read {seen.get(path)!r}")
        check(seen.get("realpath") == f"{root}/devices/pci0000:00/0000:80:00.0",
              f"device link resolves to the fake PCI function: {seen.get('realpath')}")
        check(seen.get("net-live") == "True", "the rest of /sys/class stays live under the overlay")
        pci = Path(root) / "devices/pci0000:00/0000:80:00.0"
        check((pci / "class").read_text() == "0x020000\n", "PCI class: Ethernet controller")

        # The same files through cat, and rdma-core's ibv_devinfo reading board_id through its
        # sysfs path: only under the overlay does the tree exist at /sys/class.
        cat = in_private_mounts(root, ["cat", f"{port}/gid_attrs/types/3", f"{port}/rate"],
                                environment(lib_dir))
        check(cat.stdout == "RoCE v2\n400 Gb/sec (4X NDR)\n", f"cat reads the tree: {cat.stdout!r}")
        cat_unused = in_private_mounts(root, ["cat", f"{port}/gid_attrs/types/5"],
                                       environment(lib_dir))
        check(cat_unused.returncode != 0 and "Invalid argument" in cat_unused.stderr,
              f"cat of an unused slot fails with EINVAL: {cat_unused.stderr!r}")
        devinfo = in_private_mounts(root, ["ibv_devinfo", "-d", "vps0"], environment(lib_dir))
        check("board_id:\t\t\tVROCE_0000000001" in devinfo.stdout,
              f"ibv_devinfo reads board_id from the overlaid tree: {devinfo.stdout!r}")
        plain = subprocess.run(["ibv_devinfo", "-d", "vps0"], capture_output=True, text=True,
                               env=environment(lib_dir), timeout=HANG_BOUND_S)
        check("board_id" not in plain.stdout, "without the overlay there is no board_id")
        # rdma-core's own knob for another sysfs root works the same way.
        via_path = subprocess.run(["ibv_devinfo", "-d", "vps0"], capture_output=True, text=True,
                                  env=environment(lib_dir, SYSFS_PATH=root), timeout=HANG_BOUND_S)
        check("board_id:\t\t\tVROCE_0000000001" in via_path.stdout,
              "SYSFS_PATH=<root> points ibdev_path at the tree")

        # A later process without the override refreshes the tree and drops the override file.
        subprocess.run(["ibv_devices"], capture_output=True, env=environment(
            lib_dir, VROCE_SYSFS_ROOT=root), timeout=HANG_BOUND_S, check=True)
        check(not (Path(root) / "class/infiniband/vps0/tc/1/traffic_class").exists(),
              "the traffic-class file goes when the override goes")
    check(not Path(root).exists(), "the tree is removed")
    # The overlay lived only in the child's mount namespace.
    check(not Path("/sys/class/infiniband/vps0").exists(), "the host's /sys/class is untouched")
    if not failures:
        print("PASS: the fake sysfs tree reads like the kernel's, through an overlay at /sys/class")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
