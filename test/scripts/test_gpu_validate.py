"""scripts/gpu-validate.sh and tools/gpu-validate/: the parts that run without a GPU (argument
checks, the size sweep, the summary tables read from a results folder)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from scripttest import HANG_BOUND_S, REPO

sys.path.insert(0, str(REPO / "tools" / "gpu-validate"))
import collectives  # noqa: E402  (torch is imported inside main only)
import summarize  # noqa: E402

PERF_LOG = """\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
           8             2     float     sum      -1    62.62    0.00    0.00       0    63.55    0.00    0.00       0
      262144         65536     float     sum      -1  2822.83    0.09    0.09       0  2702.54    0.10    0.10       0
    67108864      16777216     float     sum      -1   489299    0.14    0.14       3   476419    0.14    0.14       0
# Out of bounds values : 3 FAILED
# Avg bus bandwidth    : 0.0751885
"""


class Sweep(unittest.TestCase):
    def test_sizes_step_by_factor_and_always_reach_the_maximum(self):
        self.assertEqual(collectives.sizes(8, 512, 4), [8, 32, 128, 512])
        self.assertEqual(collectives.sizes(8, 256, 4), [8, 32, 128, 256])

    def test_size_parsing_and_bad_arguments(self):
        self.assertEqual(collectives.parse_size("256M"), 256 << 20)
        self.assertEqual(collectives.parse_size("8"), 8)
        with self.assertRaises(Exception):
            collectives.parse_size("lots")
        with self.assertRaises(SystemExit):
            collectives.parse_args(["--ops", "all_to_all:float32"])
        with self.assertRaises(SystemExit):
            collectives.parse_args(["--min-bytes", "1M", "--max-bytes", "8"])


class Summary(unittest.TestCase):
    def test_tables_carry_the_figures_and_count_wrong_elements(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "all_reduce_perf-gdr-dmabuf.log").write_text(PERF_LOG)
            rows = [dict(op="all_reduce", dtype="float32", bytes=8, count=2, time_us=112.6, algbw_gbs=0,
                         busbw_gbs=0, wrong=0),
                    dict(op="all_reduce", dtype="float32", bytes=262144, count=65536, time_us=578.3,
                         algbw_gbs=0.45, busbw_gbs=0.45, wrong=0)]
            # The dma-buf step ran and left only its log (it crashed): a FAIL row. The pointer and
            # socket steps never ran (--steps without them): no row at all.
            Path(d, "collectives-gdr-dmabuf.log").write_text("Segmentation fault\n")
            Path(d, "collectives-host.json").write_text(json.dumps(
                dict(world=2, nccl="2.28.9", network="RoCE", gdr_channels=0, channels=12, rows=rows, passed=True)))
            Path(d, "tp-allreduce-socket.log").write_text(
                "slowest rank       174.2     196.5     225.6\nper token: Llama 3 70B, TP=2, batch 16, fp16: 160 "
                "all-reduces of 256 KiB; communication p50 27.87 ms, p99 30.00 ms (174.2 us per all-reduce); "
                "floor 1.16 ms (24.0x); 186% of a 15 ms budget\n")
            out = subprocess.run([sys.executable, str(REPO / "tools/gpu-validate/summarize.py"), d],
                                 capture_output=True, text=True, check=True).stdout
        self.assertIn("| plugin, GPUDirect (dma-buf) | 62.6 | 2822.8 | 0.14 | - | 3 |", out)
        self.assertIn("Out of bounds values : 3 FAILED", out)
        self.assertIn("| plugin, host-staged | RoCE | 0/12 | 2 | 0 | 112.6 | 578.3 |", out)
        self.assertIn("(no result: see collectives-gdr-dmabuf.log)", out)
        self.assertNotIn("collectives-gdr-pointer", out)
        self.assertNotIn("collectives-socket", out)
        self.assertIn("| NCCL Socket (TCP) | 174.2 | 196.5 | 225.6 | 27.87 ms |", out)


class Launcher(unittest.TestCase):
    def run_script(self, *args, env=None):
        return subprocess.run([str(REPO / "scripts/gpu-validate.sh"), *args], capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, timeout=HANG_BOUND_S)

    def test_help_and_unknown_arguments(self):
        self.assertEqual(self.run_script("--help").returncode, 0)
        r = self.run_script("--bogus")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown argument --bogus", r.stderr)

    def test_missing_build_is_named_with_the_fix(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_script("--build", d)
        self.assertEqual(r.returncode, 3)
        self.assertIn("libnccl-net-roce.so is missing", r.stderr)
        self.assertIn("cmake --preset release", r.stderr)

    def test_dry_run_guards_vroce_gpudirect_against_the_driver_lock_deadlock(self):
        # Over vroce with copies made by its helper process (the default), GPUDirect runs need no
        # remedy but buffers the helper can open (NCCL_CUMEM_ENABLE=0). With in-process copies
        # they load kernels eagerly and bound tp_allreduce's launch queue
        # (vroce/src/gpu/driver_lock_hazard.h). Host-staged, Socket and real-NIC runs need neither.
        with tempfile.TemporaryDirectory() as d:
            for f in ("lib/libnccl-net-roce.so", "vroce/lib/libibverbs.so.1"):
                (Path(d) / f).parent.mkdir(parents=True, exist_ok=True)
                (Path(d) / f).touch()
            steps = "collectives:gdr-dmabuf,tp_allreduce:gdr-pointer,tp_allreduce:host,collectives:socket"
            for copies in ("helper", "in-process"):
                r = self.run_script("--dry-run", "--build", d, "--out", d + "/out", "--steps", steps,
                                    env={"VROCE_GPU_COPIES": copies})
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertFalse((Path(d) / "out").exists(), "a dry run writes nothing")
                lines = {l.split(":")[0]: l for l in r.stdout.splitlines() if l.startswith("=== ")}
                gdr, tp_gdr = lines["=== collectives-gdr-dmabuf"], lines["=== tp-allreduce-gdr-pointer"]
                host, socket = lines["=== tp-allreduce-host"], lines["=== collectives-socket"]
                for line in (gdr, tp_gdr):
                    if copies == "helper":
                        self.assertIn("NCCL_CUMEM_ENABLE=0", line)
                        self.assertNotIn("CUDA_MODULE_LOADING", line)
                        self.assertNotIn("--sync-every", line)
                    else:
                        self.assertIn("CUDA_MODULE_LOADING=EAGER", line)
                if copies == "in-process":
                    self.assertIn("--sync-every 32", tp_gdr)
                for line in (host, socket):
                    self.assertNotIn("CUDA_MODULE_LOADING", line)
                    self.assertNotIn("NCCL_CUMEM_ENABLE", line)
                    self.assertNotIn("--sync-every", line)
            real = self.run_script("--dry-run", "--build", d, "--steps", "tp_allreduce:gdr-dmabuf",
                                   env={"ROCE_GPU_VALIDATE_VROCE": "0", "VROCE_GPU_COPIES": "in-process"})
            self.assertEqual(real.returncode, 0, real.stderr)
            self.assertNotIn("CUDA_MODULE_LOADING", real.stdout)
            self.assertNotIn("NCCL_CUMEM_ENABLE", real.stdout)
            self.assertNotIn("--sync-every", real.stdout)

if __name__ == "__main__":
    unittest.main()
