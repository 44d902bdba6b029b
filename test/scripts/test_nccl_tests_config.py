"""nccl-tests-config/run_all_reduce.sh with a stub mpirun that prints canned all_reduce_perf
output: the command line, the forwarded plugin variables, and each of the three verdicts."""

import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from fixtures import make_base_bin
from scripttest import HANG_BOUND_S, REPO

RUN = REPO / "nccl-tests-config" / "run_all_reduce.sh"

MPIRUN = """#!/usr/bin/env bash
printf '%s\\n' "$*" >"$STUB_DIR/mpirun.args"
env | grep -E '^NCCL_' | sort >"$STUB_DIR/mpirun.env"
cat "$STUB_DIR/output"
exit "${STUB_RC:-0}"
"""


def table(peak_busbw="46.71", network="RoCE", gdr=True):
    rows = []
    size = 8
    while size <= 1 << 30:
        bw = peak_busbw if size == 1 << 30 else "1.23"
        rows.append(f"{size:>12}  {size // 4:>12}     float     sum      -1    100.0    0.50  {bw}      0    99.0    0.51  {bw}      0")
        size *= 2
    via = "via NET/RoCE/0/GDRDMA" if gdr else "via NET/RoCE/0"
    return "\n".join([
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0",
        f"node1:1:1 [0] NCCL INFO Using network {network}",
        f"node1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] {via}",
        f"node1:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] {via}",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        *rows,
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 18.4471 ",
    ]) + "\n"


class RunAllReduce(unittest.TestCase):
    def setUp(self):
        t = tempfile.TemporaryDirectory(prefix="ok-nccl-tests-")
        self.addCleanup(t.cleanup)
        self.dir = Path(t.name)
        make_base_bin(self.dir)
        b = self.dir / "bin"
        b.mkdir()
        (b / "mpirun").write_text(MPIRUN)
        (b / "mpirun").chmod(0o755)
        (b / "all_reduce_perf").write_text("#!/bin/sh\nexit 99\n")
        (b / "all_reduce_perf").chmod(0o755)

    def run_it(self, *args, output=None, rc=0, env=None):
        (self.dir / "output").write_text(output if output is not None else table())
        e = {"PATH": f"{self.dir / 'bin'}:{self.dir / 'sysbin'}", "STUB_DIR": str(self.dir),
             "STUB_RC": str(rc), "HOME": str(self.dir)}
        e.update(env or {})
        return subprocess.run([str(RUN), "--log", str(self.dir / "run.log"), *args], env=e,
                              capture_output=True, text=True, timeout=HANG_BOUND_S, cwd=self.dir)

    def test_two_nodes_command_and_environment(self):
        r = self.run_it("--hosts", "a,b", "two-nodes.env")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        args = (self.dir / "mpirun.args").read_text()
        self.assertIn("-np 16", args)
        self.assertIn("-H a:8,b:8", args)
        self.assertIn("all_reduce_perf -b 8 -e 1G -f 2 -g 1 -c 1", args)
        for v in ("NCCL_NET_PLUGIN", "NCCL_NET", "NCCL_ALGO", "NCCL_ROCE_DSCP", "NCCL_TESTS_MIN_BW"):
            self.assertIn(f"-x {v} ", args)
        env = (self.dir / "mpirun.env").read_text()
        for line in ("NCCL_NET_PLUGIN=roce", "NCCL_NET=RoCE", "NCCL_ALGO=Ring", "NCCL_ROCE_DSCP=26",
                     "NCCL_TESTS_MIN_BW=10", "NCCL_ROCE_REQUIRE_GDR=1"):
            self.assertIn(line + "\n", env)
        self.assertIn("verdict: network: NCCL used the RoCE plugin", r.stdout)
        self.assertIn("verdict: gpudirect: all 2 NET/RoCE channels use GDRDMA", r.stdout)
        self.assertIn("verdict: peak busbw at 1 GiB 46.71 GB/s >= 40", r.stdout)

    def test_one_node_forces_the_network_path(self):
        r = self.run_it("one-node.env", env={"GPUS_PER_NODE": "4"})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("-np 4", (self.dir / "mpirun.args").read_text())
        env = (self.dir / "mpirun.env").read_text()
        self.assertIn("NCCL_P2P_DISABLE=1\n", env)
        self.assertIn("NCCL_SHM_DISABLE=1\n", env)

    def test_eight_node_tp_needs_eight_hosts(self):
        r = self.run_it("--hosts", "a,b", "tp8-eight-nodes.env")
        self.assertEqual(r.returncode, 2)
        self.assertIn("needs 8 hosts", r.stderr)
        r = self.run_it("--hosts", ",".join("abcdefgh"), "tp8-eight-nodes.env")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("-np 8", (self.dir / "mpirun.args").read_text())

    def test_silent_fallback_fails(self):
        r = self.run_it("--hosts", "a,b", "two-nodes.env", output=table(network="Socket"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL network: NCCL did not use the RoCE plugin (Using network Socket", r.stdout)

    def test_gpudirect_off_fails(self):
        r = self.run_it("--hosts", "a,b", "two-nodes.env", output=table(gdr=False))
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL gpudirect: 2 of 2 NET/RoCE channels without GDRDMA", r.stdout)

    def test_low_peak_fails_and_min_bw_exit_propagates(self):
        r = self.run_it("--hosts", "a,b", "two-nodes.env", output=table(peak_busbw="12.50"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL peak busbw at 1 GiB 12.50 GB/s < 40", r.stdout)
        r = self.run_it("--hosts", "a,b", "two-nodes.env", rc=1)
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL all_reduce_perf exited 1", r.stdout)

    def test_dry_run_and_usage(self):
        r = self.run_it("--dry-run", "--hosts", "a,b", "two-nodes.env")
        self.assertEqual(r.returncode, 0)
        self.assertIn("all_reduce_perf -b 8 -e 1G -f 2 -g 1 -c 1", r.stdout)
        self.assertFalse((self.dir / "mpirun.args").exists())
        self.assertEqual(self.run_it("two-nodes.env").returncode, 2)
        self.assertEqual(self.run_it("nope.env").returncode, 2)
        r = self.run_it("--hosts", "a,b", "two-nodes.env", env={"MPIRUN": "no-such-mpirun"})
        self.assertEqual(r.returncode, 5)
        self.assertIn("install Open MPI", r.stderr)


if __name__ == "__main__":
    unittest.main()
