"""examples/: the pure parts of tp_allreduce.py (percentiles, reading NCCL's transport lines,
the per-rank vroce device) and what the two launchers export and run (--print-env)."""

import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from scripttest import HANG_BOUND_S, REPO

sys.path.insert(0, str(REPO / "examples"))
import tp_allreduce  # noqa: E402  (no torch needed to import it)

NCCL_LOG = """\
node1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:1234:1234 [0] NCCL INFO NET/Plugin: Loaded net plugin RoCE (v11)
node1:1234:1234 [0] NCCL INFO NET/RoCE: device mlx5_0 port 1 GID 3 ::ffff:10.0.0.1 RoCE v2, TC 104, GPUDirect dmabuf
node1:1234:1234 [0] NCCL INFO Using network RoCE
node1:1234:1240 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/RoCE/0/GDRDMA
node1:1234:1240 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/RoCE/0/GDRDMA
node1:1234:1240 [0] NCCL INFO Connected all rings
"""


class TpAllreduceLogic(unittest.TestCase):
    def test_percentiles_nearest_rank(self):
        v = sorted(float(i) for i in range(1, 101))
        self.assertEqual([tp_allreduce.percentile(v, p) for p in (50, 90, 99, 100)], [50.0, 90.0, 99.0, 100.0])
        self.assertEqual(tp_allreduce.percentile([7.0], 99), 7.0)
        with self.assertRaises(ValueError):
            tp_allreduce.percentile([], 50)

    def test_transport_lines_and_network(self):
        lines = tp_allreduce.transport_lines(NCCL_LOG)
        self.assertEqual(len(lines), 4)
        self.assertTrue(any("Loaded net plugin RoCE" in l for l in lines))
        self.assertTrue(any("via NET/RoCE/0/GDRDMA" in l for l in lines))
        self.assertFalse(any("Bootstrap" in l for l in lines))
        self.assertEqual(tp_allreduce.chosen_network(NCCL_LOG), "RoCE")
        self.assertEqual(tp_allreduce.chosen_network(NCCL_LOG.replace("network RoCE", "network Socket")), "Socket")
        self.assertIsNone(tp_allreduce.chosen_network(""))

    def test_expected_sum_and_fp16_exactness(self):
        # Ranks fill rank+1: the sum n(n+1)/2 must be exact in fp16 for any TP size used.
        for n, want in ((2, 3), (8, 36), (64, 2080)):
            self.assertEqual(tp_allreduce.expected_value(n), want)
            self.assertEqual(struct.unpack("e", struct.pack("e", want))[0], want)
        # bf16 keeps 8 significant bits: every rank puts 1, the sum is n.
        self.assertEqual([tp_allreduce.fill_value(r, "bf16") for r in (0, 5)], [1.0, 1.0])
        self.assertEqual(tp_allreduce.expected_value(64, "bf16"), 64)

    def test_presets_match_roce_bench(self):
        # The C++ table in tp_model.cpp is the other copy; both must name the same shapes.
        source = (REPO / "tools/roce-bench/src/tp_model.cpp").read_text()
        cpp = {m[0]: (m[1], int(m[2]), int(m[3]))
               for m in re.findall(r'\{"([\w.-]+)", "([^"]+)", (\d+), (\d+)\}', source)}
        self.assertEqual(cpp, tp_allreduce.MODELS)

    def test_per_token_line_is_roce_bench_s(self):
        # The same figures and the same text as tp_model_test.cpp's "the per-token line".
        line = tp_allreduce.per_token_line("Llama 3 70B", 4, 16, "fp16", 80, 8192, 12340, 15000, 77.125,
                                           2218.2912, 15)
        self.assertEqual(line, "per token: Llama 3 70B, TP=4, batch 16, fp16: 160 all-reduces of 256 KiB; "
                               "communication p50 12.34 ms, p99 15.00 ms (77.1 us per all-reduce); floor 2.22 ms "
                               "(5.6x); 82% of a 15 ms budget")
        with_compute = tp_allreduce.per_token_line("Llama 3 70B", 4, 16, "fp16", 80, 8192, 12340, 15000, 77.125,
                                                   2218.2912, 15, 10)
        self.assertTrue(with_compute.endswith("; with 10 ms of compute: 22.34 ms per token, over the budget by "
                                              "7.34 ms"))
        spare = tp_allreduce.per_token_line("Llama 3 70B", 4, 16, "fp16", 80, 8192, 12340, 15000, 77.125,
                                            2218.2912, 15, 1.5)
        self.assertTrue(spare.endswith("with 1.5 ms of compute: 13.84 ms per token, within the budget, 1.16 ms "
                                       "to spare"))

    def test_ring_floor_and_shapes(self):
        self.assertAlmostEqual(tp_allreduce.ring_allreduce_floor_us(256 * 1024, 8, 400, 1.0), 23.17504)
        self.assertAlmostEqual(tp_allreduce.ring_allreduce_floor_us(256 * 1024, 4, 400, 1.0) * 160, 2218.2912)
        self.assertEqual(tp_allreduce.model_display("llama3-70b", 40, 8192), "custom (40 layers, hidden 8192)")
        self.assertEqual(tp_allreduce.human_bytes(1536 * 1024), "1.50 MiB")
        a = tp_allreduce.parse_args(["--model", "llama3-8b", "--iters", "100"])
        self.assertEqual((a.layers, a.hidden, a.steps), (32, 4096, 2))  # 100 all-reduces: 2 steps of 64
        a = tp_allreduce.parse_args(["--steps", "3", "--layers", "2", "--dtype", "bf16"])
        self.assertEqual((a.layers, a.hidden, a.steps, a.dtype), (2, 8192, 3, "bf16"))
        with self.assertRaises(SystemExit):
            tp_allreduce.parse_args(["--model", "gpt-5"])

    def test_per_rank_vroce_device(self):
        old = dict(os.environ)
        try:
            os.environ["ROCE_EXAMPLE_VROCE_BASE"] = "127.0.0.21"
            tp_allreduce.per_rank_vroce_device(3)
            self.assertEqual(os.environ["VROCE_DEVICES"], "vroce3=127.0.0.24")
        finally:
            os.environ.clear()
            os.environ.update(old)

    def test_rank_setup_and_reading_the_nccl_log_back(self):
        old = dict(os.environ)
        try:
            for name in ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "LOCAL_RANK"):
                os.environ.pop(name, None)
            os.environ.update(RANK="1", WORLD_SIZE="2", ROCE_EXAMPLE_VROCE_BASE="127.0.0.21")
            rank, world, local_rank, pattern = tp_allreduce.rank_setup("unit")
            self.assertEqual((rank, world, local_rank), (1, 2, 0))
            self.assertEqual(os.environ["VROCE_DEVICES"], "vroce0=127.0.0.21")
            self.assertEqual((os.environ["NCCL_DEBUG"], os.environ["NCCL_DEBUG_SUBSYS"]), ("INFO", "INIT,NET"))
            self.assertTrue(pattern.startswith("/tmp/unit.") and pattern.endswith(f".{os.getpid()}.nccl.log"))
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, f"x.host.{os.getpid()}.log"), "w") as f:
                    f.write(NCCL_LOG)
                self.assertEqual(tp_allreduce.read_nccl_log(os.path.join(d, "x.%h.%p.log")), NCCL_LOG)
                self.assertEqual(tp_allreduce.read_nccl_log(os.path.join(d, "none.%p.log")), "")
        finally:
            os.environ.clear()
            os.environ.update(old)

    def test_argument_checks(self):
        self.assertEqual(tp_allreduce.parse_args([]).hidden, 8192)
        self.assertEqual(tp_allreduce.parse_args([]).batch, 16)
        with self.assertRaises(SystemExit):
            tp_allreduce.parse_args(["--iters", "0"])
        self.assertEqual(tp_allreduce.parse_args([]).sync_every, 0)
        self.assertEqual(tp_allreduce.parse_args(["--sync-every", "32"]).sync_every, 32)
        with self.assertRaises(SystemExit):
            tp_allreduce.parse_args(["--sync-every", "-1"])


class Launchers(unittest.TestCase):
    def run_launcher(self, name, env):
        e = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
        e.update(env)
        return subprocess.run([str(REPO / "examples" / name), "--print-env", "--iters", "10"], env=e,
                              capture_output=True, text=True, timeout=HANG_BOUND_S)

    def test_multi_node_launcher_exports_the_plugin_settings(self):
        p = self.run_launcher("run_tp_allreduce.sh", {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1",
                                                      "NCCL_IB_GID_INDEX": "3"})
        self.assertEqual(p.returncode, 0, p.stderr)
        for line in ("NCCL_NET=RoCE", "NCCL_NET_PLUGIN=roce", "NCCL_IB_GID_INDEX=3", "NCCL_ROCE_DSCP=26",
                     "NCCL_ROCE_REQUIRE_GDR=1", "NCCL_DEBUG=INFO"):
            self.assertIn(line + "\n", p.stdout)
        self.assertIn("torchrun --nnodes 2 --nproc-per-node 8 --node-rank 1 --master-addr 10.0.0.1", p.stdout)
        self.assertIn("tp_allreduce.py --iters 10", p.stdout)
        p = self.run_launcher("run_tp_allreduce.sh", {"NCCL_ROCE_TC": "106"})
        self.assertIn("NCCL_ROCE_TC=106\n", p.stdout)
        self.assertNotIn("NCCL_ROCE_DSCP", p.stdout)
        self.assertNotIn("NCCL_IB_GID_INDEX", p.stdout)

    def test_vroce_launcher_points_nccl_at_vroce(self):
        with tempfile.TemporaryDirectory(prefix="ok-examples-") as build:
            p = self.run_launcher("run_tp_allreduce_vroce.sh", {"BUILD_DIR": build, "NPROC_PER_NODE": "2"})
            self.assertEqual(p.returncode, 0, p.stderr)
            for line in (f"NCCL_NET_PLUGIN={build}/lib/libnccl-net-roce.so",
                         f"NCCL_IBVERBS_LIB={build}/vroce/lib/libibverbs.so.1", "NCCL_NET=RoCE",
                         "NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "ROCE_EXAMPLE_VROCE_BASE=127.0.0.21",
                         # vroce's copy helper opens buffers through CUDA IPC (docs/vroce.md)
                         "NCCL_CUMEM_ENABLE=0"):
                self.assertIn(line + "\n", p.stdout)
            self.assertNotIn("CUDA_MODULE_LOADING", p.stdout)
            self.assertIn("torchrun --standalone --nproc-per-node 2", p.stdout)
            self.assertIn("tp_allreduce.py --iters 10", p.stdout)
            # In-process copies and the driver's lock (vroce/src/gpu/driver_lock_hazard.h).
            p = self.run_launcher("run_tp_allreduce_vroce.sh", {"BUILD_DIR": build, "NPROC_PER_NODE": "2",
                                                                "VROCE_GPU_COPIES": "in-process"})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("CUDA_MODULE_LOADING=EAGER\n", p.stdout)
            self.assertNotIn("NCCL_CUMEM_ENABLE", p.stdout)
            self.assertIn("tp_allreduce.py --sync-every 32 --iters 10", p.stdout)
            e = {"PATH": "/usr/bin:/bin", "BUILD_DIR": build, "NPROC_PER_NODE": "2"}
            p = subprocess.run([str(REPO / "examples" / "run_tp_allreduce_vroce.sh")], env=e,
                               capture_output=True, text=True, timeout=HANG_BOUND_S)
            self.assertEqual(p.returncode, 5)
            self.assertIn("libnccl-net-roce.so is missing", p.stderr)


if __name__ == "__main__":
    unittest.main()
