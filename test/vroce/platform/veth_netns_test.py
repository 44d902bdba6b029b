#!/usr/bin/env python3
"""vroce devices bound to a veth pair between two network namespaces.

Builds namespaces vp-<pid>-a and vp-<pid>-b joined by a veth pair (10.77.1.1/24 and
10.77.1.2/24, plus fd77:1::1/64 on side a, lo up in both), then checks, inside them:
- Debian's ibv_devinfo -v: a device bound by netdev name, one by IPv6 literal and one on lo;
  active MTU by the netdev MTU (1500 -> 1024, lo -> 4096), node GUID and link-local GID from
  the veth's real MAC, the bound address in the GID table;
- ibv_devices in the other namespace, and an address owned by the other namespace refused;
- a netdev MTU too small for RoCE refused with the reason;
- the hidden [netns] cases of vroce_platform_tests: ndev_ifindex, the real MAC, and the port
  following MTU changes while a context is open.
The namespaces (and with them the veths) are deleted on every exit path.
Exit 0 on success, 1 on a failed check, 77 (skip) without root, ip netns or ibverbs-utils.
"""
import argparse
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from hang_bound import HANG_BOUND_S  # noqa: E402  (one bound for every suite)

SKIP = 77
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}")


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=HANG_BOUND_S)


def eui64_text(mac):
    octets = [int(x, 16) for x in mac.split(":")]
    eui = [octets[0] ^ 0x02, octets[1], octets[2], 0xff, 0xfe, octets[3], octets[4], octets[5]]
    return ":".join(f"{eui[i]:02x}{eui[i + 1]:02x}" for i in range(0, 8, 2))


def in_namespace(namespace, command, lib_dir, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("VROCE_")}
    environment.pop("SYSFS_PATH", None)
    environment["LD_LIBRARY_PATH"] = str(lib_dir)
    environment.update(env)
    return subprocess.run(["ip", "netns", "exec", namespace, *command], capture_output=True,
                          text=True, env=environment, timeout=120)


def devinfo_sections(text):
    """{device: text of its ibv_devinfo section}."""
    sections = {}
    for block in re.split(r"^hca_id:\t", text, flags=re.M)[1:]:
        name, _, rest = block.partition("\n")
        sections[name.strip()] = rest
    return sections


def field(section, key):
    match = re.search(rf"^\s+{key}:\s+(.*)$", section, flags=re.M)
    return match.group(1).strip() if match else None


def gids(section):
    return dict((int(i), value.strip())
                for i, value in re.findall(r"GID\[\s*(\d+)\]:\s+(.*)$", section, flags=re.M))


class Namespaces:
    def __init__(self):
        tag = os.getpid()
        self.a, self.b = f"vp-{tag}-a", f"vp-{tag}-b"
        self.veth_a, self.veth_b = f"vpa{tag % 100000}", f"vpb{tag % 100000}"

    def __enter__(self):
        try:
            ip("netns", "add", self.a)
            ip("netns", "add", self.b)
            ip("-n", self.a, "link", "add", self.veth_a, "type", "veth", "peer", "name",
               self.veth_b, "netns", self.b)
            ip("-n", self.a, "addr", "add", "10.77.1.1/24", "dev", self.veth_a)
            ip("-n", self.a, "-6", "addr", "add", "fd77:1::1/64", "dev", self.veth_a, "nodad")
            ip("-n", self.b, "addr", "add", "10.77.1.2/24", "dev", self.veth_b)
            for namespace, veth in ((self.a, self.veth_a), (self.b, self.veth_b)):
                ip("-n", namespace, "link", "set", "lo", "up")
                ip("-n", namespace, "link", "set", veth, "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for namespace in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=HANG_BOUND_S)

    def restore_mtu(self):
        """MTU 1500 again; the kernel drops IPv6 addresses below MTU 1280, so re-add ours."""
        ip("-n", self.a, "link", "set", self.veth_a, "mtu", "1500")
        ip("-n", self.a, "-6", "addr", "replace", "fd77:1::1/64", "dev", self.veth_a, "nodad")

    def mac(self, namespace, veth):
        out = subprocess.run(["ip", "-n", namespace, "-j", "link", "show", veth], check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out)[0]["address"]


def run_checks(ns, lib_dir, platform_tests):
    mac_a = ns.mac(ns.a, ns.veth_a)
    mac_b = ns.mac(ns.b, ns.veth_b)

    devinfo = in_namespace(ns.a, ["ibv_devinfo", "-v"], lib_dir,
                           VROCE_DEVICES=f"vpn0={ns.veth_a},vpn1=fd77:1::1,vpn2=127.0.2.71")
    check(devinfo.returncode == 0, f"ibv_devinfo in {ns.a}: {devinfo.stderr}")
    sections = devinfo_sections(devinfo.stdout)
    check(sorted(sections) == ["vpn0", "vpn1", "vpn2"], f"three devices: {sorted(sections)}")

    veth_guid = eui64_text(mac_a)
    vpn0 = sections.get("vpn0", "")
    check(field(vpn0, "node_guid") == veth_guid,
          f"vpn0 GUID is the EUI-64 of {ns.veth_a}'s MAC {mac_a}: {field(vpn0, 'node_guid')}")
    check(field(vpn0, "active_mtu") == "1024 (3)", f"vpn0 on MTU 1500: {field(vpn0, 'active_mtu')}")
    g = gids(vpn0)
    check(g.get(3) == "::ffff:10.77.1.1, RoCE v2", f"vpn0 GID 3: {g.get(3)}")
    # As on a ConnectX: the default GID fe80::<EUI-64 of the veth's MAC> at 0/1, then the
    # bound address's pair.
    check(sorted(g) == [0, 1, 2, 3], f"vpn0 GIDs: {sorted(g)}")
    link_local = ipaddress.IPv6Address(f"fe80::{veth_guid}")
    check(g.get(0) == f"{link_local.exploded}, RoCE v1", f"vpn0 GID 0: {g.get(0)}")
    check(g.get(1) == f"{link_local.compressed}, RoCE v2", f"vpn0 GID 1: {g.get(1)}")

    vpn1 = sections.get("vpn1", "")
    check(field(vpn1, "node_guid") == veth_guid, "vpn1 (same veth) has the veth's GUID")
    g = gids(vpn1)
    check(g.get(2) == "fd77:0001:0000:0000:0000:0000:0000:0001, RoCE v1", f"vpn1 GID 2: {g.get(2)}")
    check(g.get(3) == "fd77:1::1, RoCE v2", f"vpn1 GID 3: {g.get(3)}")
    check(field(vpn1, "active_mtu") == "1024 (3)", "vpn1 on MTU 1500")

    vpn2 = sections.get("vpn2", "")
    check(field(vpn2, "active_mtu") == "4096 (5)", "vpn2 on the namespace's lo")
    check(gids(vpn2).get(3) == "::ffff:127.0.2.71, RoCE v2", "vpn2 GID 3")

    listing = in_namespace(ns.b, ["ibv_devices"], lib_dir,
                           VROCE_DEVICES="vpn3=10.77.1.2,vpn4=10.77.1.1")
    rows = re.findall(r"^\s+(\S+)\s+([0-9a-f]{16})$", listing.stdout, flags=re.M)
    check(rows == [("vpn3", eui64_text(mac_b).replace(":", ""))],
          f"{ns.b} lists vpn3 with {ns.veth_b}'s GUID: {rows}")
    check("device vpn4 (10.77.1.1) is not available: no netdev in this network namespace owns "
          "10.77.1.1" in listing.stderr,
          f"an address of the other namespace is refused: {listing.stderr!r}")

    ip("-n", ns.a, "link", "set", ns.veth_a, "mtu", "300")
    small = in_namespace(ns.a, ["ibv_devinfo", "-l"], lib_dir, VROCE_DEVICES=f"vpn0={ns.veth_a}")
    ns.restore_mtu()
    check("0 HCAs found" in small.stdout, f"no device on an MTU-300 netdev: {small.stdout!r}")
    check(f"has MTU 300, below the 352 bytes" in small.stderr and "mtu 1500" in small.stderr,
          f"the small MTU is reported with the fix: {small.stderr!r}")

    for device, address in (("vpn0", "10.77.1.1"), ("vpn1", "fd77:1::1")):
        spec = f"vpn0={ns.veth_a}" if device == "vpn0" else "vpn1=fd77:1::1"
        cases = in_namespace(ns.a, [str(platform_tests), "[netns]"], lib_dir,
                             VROCE_PLATFORM_KEEP_ENV="1", VROCE_DEVICES=spec,
                             VP_NETNS_DEVICE=device, VP_NETNS_NETDEV=ns.veth_a,
                             VP_NETNS_ADDRESS=address, VP_NETNS_MAC=mac_a)
        passed = cases.returncode == 0 and re.search(r"All tests passed \(\d+ assertions in 2 test",
                                                     cases.stdout)
        check(passed, f"[netns] cases for {device}:\n{cases.stdout}{cases.stderr}")
        ns.restore_mtu()  # the cases lower the MTU below IPv6's minimum on the way


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib-dir", required=True)
    parser.add_argument("--platform-tests", required=True)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("SKIP: network namespaces need root")
        return SKIP
    for tool in ("ip", "ibv_devinfo", "ibv_devices"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed (iproute2, ibverbs-utils)")
            return SKIP
    probe = subprocess.run(["ip", "netns", "add", f"vp-{os.getpid()}-probe"], capture_output=True,
                           text=True)
    if probe.returncode != 0:
        print(f"SKIP: cannot create network namespaces here: {probe.stderr.strip()}")
        return SKIP
    subprocess.run(["ip", "netns", "del", f"vp-{os.getpid()}-probe"], capture_output=True)

    with Namespaces() as ns:
        run_checks(ns, Path(args.lib_dir).resolve(), Path(args.platform_tests).resolve())
    leftovers = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    check(f"vp-{os.getpid()}-" not in leftovers, "namespaces removed")
    if not failures:
        print("PASS: devices on a veth in a namespace report the netdev's MTU, MAC and addresses")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
