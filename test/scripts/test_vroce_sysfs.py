"""The scripts against the fake sysfs tree that vroce writes (VROCE_SYSFS_ROOT): a vroce-linked
program (Debian's ibv_devices, run on vroce through LD_LIBRARY_PATH) creates the tree, then
roce-show-gids and diagnose_roce.sh read it as they would read a ConnectX host's /sys."""

import os
import subprocess
import unittest
from pathlib import Path

from scripttest import HANG_BOUND_S, ScriptTest

VROCE_LIB_DIR = os.environ.get("ROCE_TEST_VROCE_LIB_DIR", "")
# The loopback addresses with_test_addresses (test/support) claimed for this run.
ADDR = os.environ.get("ROCE_TEST_ADDRESSES", "").split()
DEVICES = f"vroce0={ADDR[0]},vroce1={ADDR[1]}" if ADDR else ""


@unittest.skipUnless(VROCE_LIB_DIR, "vroce is not part of this build")
class VroceSysfs(ScriptTest):
    def vroce_tree(self, **extra_env):
        self.assertTrue(ADDR, "ROCE_TEST_ADDRESSES is not set: run under test/support's with_test_addresses")
        lib = Path(VROCE_LIB_DIR) / "libibverbs.so.1"
        self.assertTrue(lib.exists(), f"{lib} is not built: cmake --build build/ci --target vroce")
        self.node()  # stubs and an (unused) fixture, for the commands diagnose runs
        sysfs = self.root / "vroce-sys"
        env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": VROCE_LIB_DIR, "VROCE_SYSFS_ROOT": str(sysfs),
               "VROCE_DEVICES": DEVICES, **extra_env}
        p = subprocess.run(["ibv_devices"], env=env, capture_output=True, text=True, timeout=HANG_BOUND_S)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("vroce0", p.stdout)
        self.assertTrue((sysfs / "class/infiniband/vroce1/ports/1/gids/0").exists(), p.stderr)
        self.env["ROCE_SYSFS_ROOT"] = str(sysfs)
        return sysfs

    def test_show_gids_reads_vroce_tree(self):
        self.vroce_tree()
        r = self.run_script("roce-show-gids", "--json")
        self.assertEqual(r.rc, 0, r.err)
        self.assertJsonTool(r.out)
        chosen = {g["device"]: g for g in r.json()["gids"] if g["plugin_choice"]}
        self.assertEqual(sorted(chosen), ["vroce0", "vroce1"])
        self.assertEqual((chosen["vroce0"]["ipv4"], chosen["vroce0"]["type"]), (ADDR[0], "v2"))
        # vroce's table is a ConnectX's (link-local pair at 0/1): the IPv4-mapped v2 entry is 3.
        self.assertEqual(chosen["vroce0"]["index"], 3)
        self.assertEqual(chosen["vroce1"]["ipv4"], ADDR[1])

    def test_diagnose_reads_vroce_tree(self):
        self.vroce_tree()
        r = self.run_script("diagnose_roce.sh", "--json", "--no-gdr-check", "--no-init-check",
                            env={"NCCL_ROCE_DSCP": "26"})
        self.assertJsonTool(r.out)
        doc = r.json()
        by = {(f["check"], f["subject"]): f for f in doc["findings"]}
        for dev, ip in (("vroce0", ADDR[0]), ("vroce1", ADDR[1])):
            self.assertEqual(by[("port", f"{dev}/1")]["severity"], "OK", by[("port", f"{dev}/1")])
            gid = by[("gid", f"{dev}/1")]
            self.assertEqual(gid["severity"], "OK")
            self.assertIn(f"RoCE v2 {ip}", gid["message"])
            self.assertEqual(by[("tc-override", f"{dev}/1")]["severity"], "OK")

    def test_rocev1_index_and_tc_override_on_vroce(self):
        self.vroce_tree(VROCE_TC_OVERRIDE="0")
        v2 = [g for g in self.run_script("roce-show-gids", "--json").json()["gids"]
              if g["device"] == "vroce0" and g["plugin_choice"]][0]
        v1 = [g for g in self.run_script("roce-show-gids", "--json").json()["gids"]
              if g["device"] == "vroce0" and g["type"] == "v1" and g["ipv4"] == ADDR[0]][0]
        r = self.run_script("diagnose_roce.sh", "--json", "--no-gdr-check", "--no-init-check",
                            env={"NCCL_ROCE_DSCP": "26", "NCCL_IB_GID_INDEX": str(v1["index"])})
        doc = r.json()
        self.assertEqual(r.rc, 1)
        gid = [f for f in doc["findings"] if f["check"] == "gid" and f["subject"] == "vroce0/1"][0]
        self.assertEqual(gid["severity"], "FAIL")
        self.assertIn("is a RoCE v1 entry", gid["message"])
        self.assertIn(f"use NCCL_IB_GID_INDEX={v2['index']}", gid["fix"])
        tc = [f for f in doc["findings"] if f["check"] == "tc-override" and f["subject"] == "vroce0/1"][0]
        self.assertEqual(tc["severity"], "FAIL")
        self.assertIn("forces TC 0", tc["message"])


if __name__ == "__main__":
    unittest.main()
