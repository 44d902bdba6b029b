"""tools/gdr-check where no GPU is usable (CUDA_VISIBLE_DEVICES hides any GPU, so this holds on
GPU machines too): it says so plainly and exits 3; diagnose_roce.sh turns that into a WARN."""

import json
import os
import subprocess
import unittest

from fixtures import Node
from scripttest import HANG_BOUND_S, ScriptTest

GDR_CHECK = os.environ.get("ROCE_TEST_GDR_CHECK", "")
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}


@unittest.skipUnless(GDR_CHECK, "gdr-check is not built (no CUDA toolkit)")
class GdrCheckWithoutGpu(ScriptTest):
    def gdr(self, *args):
        env = dict(os.environ, **NO_GPU)
        return subprocess.run([GDR_CHECK, *args], env=env, capture_output=True, text=True, timeout=HANG_BOUND_S)

    def test_text_says_no_gpu_and_exits_3(self):
        p = self.gdr()
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"^gdr-check: no usable CUDA GPU \(.+\): GPUDirect RDMA cannot be checked on this machine\n$")

    def test_json_and_brief(self):
        p = self.gdr("--json")
        self.assertEqual(p.returncode, 3)
        self.assertJsonTool(p.stdout)
        doc = json.loads(p.stdout)
        self.assertEqual((doc["exit_status"], doc["gpu"], doc["modes"]), (3, None, []))
        self.assertIn("no usable CUDA GPU", doc["error"])
        p = self.gdr("--brief")
        self.assertEqual(p.returncode, 3)
        self.assertNotIn("mode=", p.stdout)

    def test_usage_errors_exit_2(self):
        for args in (["--size", "12"], ["--bogus"], ["--dev"], ["--iters", "x"]):
            p = self.gdr(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("Usage: gdr-check", p.stderr)
        self.assertEqual(self.gdr("--help").returncode, 0)

    def test_diagnose_reports_no_gpu_as_warn(self):
        self.node(Node())
        r = self.run_script("diagnose_roce.sh", "--json", "--no-init-check",
                            env={"ROCE_GDR_CHECK": GDR_CHECK, "NCCL_ROCE_DSCP": "26", **NO_GPU})
        doc = r.json()
        found = [f for f in doc["findings"] if f["check"] == "gdr-check"]
        self.assertEqual(len(found), 1, doc["findings"])
        self.assertEqual(found[0]["severity"], "WARN")
        self.assertIn("no CUDA GPU usable here", found[0]["message"])


if __name__ == "__main__":
    unittest.main()
