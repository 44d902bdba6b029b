#!/usr/bin/env python3
"""Debian's own ibv_devices and ibv_devinfo, unmodified, run on vroce through LD_LIBRARY_PATH.

They are the oracle for the ABI: built against rdma-core 44 with immediate binding, they start
only if every symbol and version node they import exists, and they print what rdma-core's
inline wrappers and exported functions return. The output is parsed and each value checked
against what vroce's devices must report. Devices use the
loopback addresses with_test_addresses claimed for this run (ROCE_TEST_ADDRESSES).
Exit 0 on success, 1 on a failed check, 77 (skip) without ibverbs-utils.
"""
import argparse
import ipaddress
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from hang_bound import HANG_BOUND_S  # noqa: E402  (one bound for every suite)
from test_addresses import test_addresses  # noqa: E402

SKIP = 77
failures = []
ADDR = test_addresses()


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}")


def run(lib_dir, args, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("VROCE_")}
    environment.pop("SYSFS_PATH", None)
    environment["LD_LIBRARY_PATH"] = str(lib_dir)
    environment.update(env)
    return subprocess.run(args, capture_output=True, text=True, env=environment, timeout=HANG_BOUND_S)


def hex_groups(guid_text):
    return bytes.fromhex(guid_text.replace(":", ""))


def parse_devinfo(text):
    """{device: {"attrs": {...}, "ports": {n: {...}}, "gids": {i: (text, type)}}}."""
    devices, device, port = {}, None, None
    for line in text.splitlines():
        if line.startswith("hca_id:"):
            device = {"attrs": {}, "ports": {}, "gids": {}}
            devices[line.split(":", 1)[1].strip()] = device
            port = None
            continue
        stripped = line.strip()
        match = re.match(r"port:\s+(\d+)$", stripped)
        if match:
            port = device["ports"].setdefault(int(match.group(1)), {})
            continue
        match = re.match(r"GID\[\s*(\d+)\]:\s+(\S+?)(?:, (RoCE v\d))?$", stripped)
        if match:
            device["gids"][int(match.group(1))] = (match.group(2), match.group(3))
            continue
        match = re.match(r"([A-Za-z0-9_ ]+):\s+(.*)$", stripped)
        if match and device is not None:
            target = port if port is not None else device["attrs"]
            target[match.group(1).strip()] = match.group(2).strip()
    return devices


def check_loads_our_library(lib_dir, binary):
    out = run(lib_dir, [binary], LD_TRACE_LOADED_OBJECTS="1").stdout
    match = re.search(r"libibverbs\.so\.1 => (\S+)", out)
    resolved = Path(match.group(1)).resolve() if match else None
    check(resolved == (Path(lib_dir) / "libibverbs.so.1").resolve(),
          f"{binary} resolves libibverbs.so.1 to vroce's ({resolved})")


def check_devices_listing(lib_dir):
    result = run(lib_dir, ["ibv_devices"], VROCE_DEVICES=f"vpu0={ADDR[0]},vpu1={ADDR[1]}")
    check(result.returncode == 0, f"ibv_devices exits 0 ({result.returncode}: {result.stderr})")
    rows = re.findall(r"^\s+(\S+)\s+([0-9a-f]{16})$", result.stdout, flags=re.M)
    check([name for name, _ in rows] == ["vpu0", "vpu1"], f"ibv_devices lists vpu0, vpu1: {rows}")
    guids = [bytes.fromhex(guid) for _, guid in rows]
    for guid in guids:
        # EUI-64 of a locally administered MAC: ff:fe in the middle, and the universal/local
        # bit (flipped by EUI-64) clear.
        check(guid[3:5] == b"\xff\xfe", f"GUID {guid.hex()} is an EUI-64")
        check(guid[0] & 0x02 == 0, f"GUID {guid.hex()} comes from a locally administered MAC")
    check(len(set(guids)) == len(guids), "GUIDs are distinct")
    return dict((name, bytes.fromhex(guid)) for name, guid in rows)


def check_devinfo(lib_dir, gbps, width, speed, guids):
    env = {"VROCE_DEVICES": f"vpu0={ADDR[0]},vpu1={ADDR[1]}"}
    if gbps is not None:
        env["VROCE_PORT_GBPS"] = str(gbps)
    result = run(lib_dir, ["ibv_devinfo", "-v"], **env)
    check(result.returncode == 0, f"ibv_devinfo -v exits 0 ({result.returncode}: {result.stderr})")
    devices = parse_devinfo(result.stdout)
    check(sorted(devices) == ["vpu0", "vpu1"], f"ibv_devinfo shows vpu0 and vpu1: {sorted(devices)}")
    for name, address in (("vpu0", ADDR[0]), ("vpu1", ADDR[1])):
        device = devices.get(name)
        if device is None:
            continue
        attrs = device["attrs"]
        expected = {
            "transport": "InfiniBand (0)",
            "fw_ver": "1.0.0 (vroce)",
            "vendor_id": "0x25652",
            "vendor_part_id": "4791",
            "phys_port_cnt": "1",
            "max_qp_rd_atom": "16",
            "max_qp_init_rd_atom": "16",
            "atomic_cap": "ATOMIC_NONE (0)",
            "max_pkeys": "1",
            "num_comp_vectors": "1",
        }
        for key, value in expected.items():
            check(attrs.get(key) == value, f"{name} {key} is {value!r}, got {attrs.get(key)!r}")
        node_guid = hex_groups(attrs.get("node_guid", "0"))
        check(node_guid == guids.get(name), f"{name} node_guid matches ibv_devices")
        check(attrs.get("sys_image_guid") == attrs.get("node_guid"), f"{name} sys_image_guid")
        port = device["ports"].get(1, {})
        expected_port = {
            "state": "PORT_ACTIVE (4)",
            "max_mtu": "4096 (5)",
            "active_mtu": "4096 (5)",  # lo: MTU 65536
            "port_lid": "0",
            "max_vl_num": "1 (1)",
            "link_layer": "Ethernet",
            "port_cap_flags": "0x04010000",
            "port_cap_flags2": "0x0000",
            "max_msg_sz": "0x40000000",
            "pkey_tbl_len": "1",
            "gid_tbl_len": "16",
            "active_width": width,
            "active_speed": speed,
            "phys_state": "LINK_UP (5)",
        }
        for key, value in expected_port.items():
            check(port.get(key) == value, f"{name} port 1 {key} is {value!r}, got {port.get(key)!r}")
        gids = device["gids"]
        # As on a ConnectX: the default GID fe80::<EUI-64> (the node GUID) at 0/1, then the
        # bound address's pair at 2/3.
        check(sorted(gids) == [0, 1, 2, 3], f"{name} shows GIDs 0-3: {sorted(gids)}")
        link_local = ipaddress.IPv6Address(b"\xfe\x80" + bytes(6) + node_guid)
        check(gids.get(0) == (link_local.exploded, "RoCE v1"), f"{name} GID 0 {gids.get(0)}")
        check(gids.get(1) == (link_local.compressed, "RoCE v2"), f"{name} GID 1 {gids.get(1)}")
        mapped = ipaddress.IPv6Address("::ffff:" + address).exploded
        check(gids.get(2) == (mapped, "RoCE v1"), f"{name} GID 2 {gids.get(2)}")
        check(gids.get(3) == (f"::ffff:{address}", "RoCE v2"), f"{name} GID 3 {gids.get(3)}")


def check_connectx7_identity(lib_dir):
    result = run(lib_dir, ["ibv_devinfo", "-v", "-d", "vpu0"], VROCE_DEVICES=f"vpu0={ADDR[4]}",
                 VROCE_IDENTITY="connectx7")
    attrs = parse_devinfo(result.stdout).get("vpu0", {}).get("attrs", {})
    check(attrs.get("vendor_id") == "0x02c9" and attrs.get("vendor_part_id") == "4129",
          f"VROCE_IDENTITY=connectx7 presents Mellanox 0x02c9 / 4129: {attrs.get('vendor_id')} "
          f"{attrs.get('vendor_part_id')}")


def check_errors_reported(lib_dir):
    result = run(lib_dir, ["ibv_devinfo", "-l"],
                 VROCE_DEVICES=f"vpu0={ADDR[2]},vpbad=10.254.254.254", VROCE_PORT_GBPS="300")
    check(result.returncode == 0, "ibv_devinfo -l runs with a bad device configured")
    check("1 HCA found" in result.stdout and "vpu0" in result.stdout,
          f"only the resolvable device is listed: {result.stdout!r}")
    check('VROCE_PORT_GBPS="300" is invalid' in result.stderr and "keeping 400" in result.stderr,
          f"the malformed speed is reported: {result.stderr!r}")
    check("device vpbad (10.254.254.254) is not available" in result.stderr and
          "ip addr add" in result.stderr,
          f"the unowned address is reported with a fix: {result.stderr!r}")
    missing = run(lib_dir, ["ibv_devinfo", "-d", "vp-none"], VROCE_DEVICES=f"vpu0={ADDR[3]}")
    check(missing.returncode != 0 and "wasn't found" in missing.stderr,
          "ibv_devinfo -d on an unknown device fails")
    empty = run(lib_dir, ["ibv_devinfo"], VROCE_DEVICES="")
    check(empty.returncode != 0 and "No IB devices found" in empty.stderr,
          "an empty device list is an empty list")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib-dir", required=True)
    args = parser.parse_args()
    for tool in ("ibv_devices", "ibv_devinfo"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed (apt-get install ibverbs-utils)")
            return SKIP
    lib_dir = Path(args.lib_dir)
    for tool in ("ibv_devices", "ibv_devinfo"):
        check_loads_our_library(lib_dir, shutil.which(tool))
    guids = check_devices_listing(lib_dir)
    check_devinfo(lib_dir, None, "4X (2)", "100.0 Gbps (128)", guids)  # default: 400 Gb/s
    check_devinfo(lib_dir, 100, "4X (2)", "25.0 Gbps (32)", guids)
    check_devinfo(lib_dir, 200, "4X (2)", "50.0 Gbps (64)", guids)
    check_devinfo(lib_dir, 800, "8X (4)", "100.0 Gbps (128)", guids)
    check_connectx7_identity(lib_dir)
    check_errors_reported(lib_dir)
    if not failures:
        print("PASS: ibv_devices and ibv_devinfo -v report vroce's devices correctly")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
