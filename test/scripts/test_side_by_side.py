"""The side-by-side benchmark inside NCCL without a GPU: tools/gpu-validate/side_by_side.py's
contenders, checks of NCCL's log, and cells from rounds; record.py's record of a gpu-validate
folder; scripts/results-table's tables from records, and that docs/benchmarks.md's tables are the
ones docs/results/ gives (so nobody types them)."""

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest
import unittest.mock
from pathlib import Path

from scripttest import HANG_BOUND_S, REPO

sys.path.insert(0, str(REPO / "tools" / "gpu-validate"))
import record  # noqa: E402
import side_by_side  # noqa: E402

RESULTS_TABLE = REPO / "scripts" / "results-table"


def load_results_table():
    loader = importlib.machinery.SourceFileLoader("results_table", str(RESULTS_TABLE))
    spec = importlib.util.spec_from_loader("results_table", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def cell(name, t, wrong=0):
    return {"name": name, "bytes": int(name) if name.isdigit() else 262144, "dtype": "float32", "iters": 50,
            "time_us": t, "busbw_gbs": 1.0, "wrong": wrong}


GOOD_ROCE_LOG = """\
host:1:2 NCCL INFO Using network RoCE
host:1:2 NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/RoCE/0/GDRDMA
host:1:2 NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/RoCE/0/GDRDMA
"""


class Contenders(unittest.TestCase):
    def args(self, *extra):
        return side_by_side.parse_args(["--sweep", "/x/sweep", "--out", "/tmp/x", *extra])

    def test_netib_only_with_its_plugin_and_ours_always(self):
        self.assertEqual(self.args().contenders, ["ours", "control", "ib"])
        self.assertEqual(self.args("--netib", "/p.so").contenders, ["ours", "control", "ib", "netib"])
        for bad in (["--contenders", "ib,netib"], ["--contenders", "ours,netib"], ["--contenders", "ours,tcp"],
                    ["--ranks", "1"], ["--modes", "socket"], ["--rounds", "0"]):
            with self.subTest(bad=bad), self.assertRaises(SystemExit):
                self.args(*bad)

    def test_each_contender_runs_the_transport_and_mode_it_names(self):
        a = self.args("--netib", "/p/libnccl-net.so", "--build", "/b")
        env, sysfs = side_by_side.contender_env("ours", "gdr-dmabuf", a)
        # Every contender in the same fake sysfs: the same PCI topology, so NCCL builds the same
        # channels for each and the ratio measures the transports.
        self.assertTrue(sysfs)
        self.assertEqual((env["NCCL_NET"], env["NCCL_NET_GDR_LEVEL"], env["NCCL_ROCE_REQUIRE_GDR"]), ("RoCE", "SYS", "1"))
        self.assertTrue(env["NCCL_NET_PLUGIN"].endswith("lib/libnccl-net-roce.so"))
        env, sysfs = side_by_side.contender_env("ib", "host", a)
        self.assertTrue(sysfs)
        self.assertEqual((env["NCCL_NET"], env["NCCL_NET_PLUGIN"], env["NCCL_NET_GDR_LEVEL"]), ("IB", "none", "LOC"))
        env, _ = side_by_side.contender_env("netib", "host", a)
        self.assertEqual(env["NCCL_NET_PLUGIN"], "/p/libnccl-net.so")
        cmd = side_by_side.sweep_command(a, 4, "/o/r.json", True)
        self.assertTrue(cmd[0].endswith("in_vroce_sysfs.sh"))
        self.assertEqual(cmd[1:3], ["4", "/x/sweep"])

    def test_fused_gives_each_rank_two_functions_of_one_card_and_only_when_named(self):
        self.assertNotIn("fused", self.args("--netib", "/p.so").contenders)
        a = self.args("--contenders", "ours,fused", "--build", "/b")
        env, sysfs = side_by_side.contender_env("fused", "host", a)
        self.assertTrue(sysfs)
        self.assertEqual((env["NCCL_NET"], env["ROCE_EXAMPLE_VROCE_MEMBERS"]), ("RoCE", "2"))
        self.assertNotIn("ROCE_EXAMPLE_VROCE_MEMBERS", side_by_side.contender_env("ours", "host", a)[0])
        # The fake sysfs holds every rank's two devices.
        self.assertEqual(side_by_side.sweep_command(a, 4, "/o/r.json", True, 2)[1], "8")

    def test_without_an_mps_daemon_it_refuses_to_run(self):
        with tempfile.TemporaryDirectory() as pipes, unittest.mock.patch.dict(
                os.environ, {"CUDA_MPS_PIPE_DIRECTORY": pipes}), unittest.mock.patch.object(
                side_by_side, "run_one", side_effect=AssertionError("ran a sweep")):
            self.assertEqual(side_by_side.main(["--sweep", "/x/sweep", "--out", pipes + "/o"]), 2)
            Path(pipes, "control").touch()
            self.assertIsNotNone(side_by_side.mps_control_pipe())


class LogChecks(unittest.TestCase):
    def test_a_run_that_used_what_it_asked_for_passes(self):
        self.assertEqual(side_by_side.log_problems(GOOD_ROCE_LOG, "ours", "gdr-dmabuf"), [])

    def test_other_network_missing_gdr_or_missing_plugin_are_problems(self):
        half = GOOD_ROCE_LOG.replace("0/GDRDMA\nhost:1:2 NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/RoCE/0/GDRDMA",
                                     "0/GDRDMA\nhost:1:2 NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/RoCE/0")
        self.assertIn("1 of 2 network channels without GDRDMA", side_by_side.log_problems(half, "ours", "gdr-dmabuf"))
        self.assertIn("2 network channels use GDRDMA where host staging was asked for",
                      side_by_side.log_problems(GOOD_ROCE_LOG, "ours", "host"))
        ib = GOOD_ROCE_LOG.replace("RoCE", "IB")
        self.assertEqual(side_by_side.log_problems(ib, "ib", "gdr-dmabuf"), [])
        self.assertIn("NCCL did not load the net_ib plugin (no 'Loaded net plugin' line)",
                      side_by_side.log_problems(ib, "netib", "gdr-dmabuf"))
        self.assertIn("NCCL used network 'IB', expected 'RoCE'", side_by_side.log_problems(ib, "ours", "gdr-dmabuf"))
        self.assertIn("NCCL did not fuse the rank's devices (no 'makeVDevice: virtual NIC' line)",
                      side_by_side.log_problems(GOOD_ROCE_LOG, "fused", "gdr-dmabuf"))
        fused = GOOD_ROCE_LOG + "host:1:2 NCCL INFO NET/RoCE makeVDevice: virtual NIC 2 of 2 devices\n"
        self.assertEqual(side_by_side.log_problems(fused, "fused", "gdr-dmabuf"), [])


class Cells(unittest.TestCase):
    def test_paired_rounds_give_ratio_interval_and_verdict_beside_the_control(self):
        rounds = []
        for r in range(5):
            rounds.append({"ours": {"8": cell("8", 100 + r)}, "control": {"8": cell("8", 100 + r)},
                           "ib": {"8": cell("8", 50 + r / 2)}, "netib": {"8": cell("8", 200 + 2 * r)}})
        rows = side_by_side.summarize(rounds, ["ours", "control", "ib", "netib"])
        self.assertEqual(len(rows), 1)
        row = rows[0]
        self.assertEqual(row["rounds"], 5)
        self.assertAlmostEqual(row["vs_netib"]["paired_ratio"], 0.5)
        self.assertEqual(row["vs_netib"]["verdict"], "faster")
        self.assertAlmostEqual(row["vs_ib"]["paired_ratio"], 2.0)
        self.assertEqual(row["vs_ib"]["verdict"], "slower")
        self.assertEqual(row["control"]["interval"], [1.0, 1.0])

    def test_a_round_missing_a_cell_is_left_out_of_that_cell(self):
        rounds = [{"ours": {"8": cell("8", 10)}, "ib": {"8": cell("8", 10)}},
                  {"ours": {"8": cell("8", 10)}, "ib": {}}]
        self.assertEqual(side_by_side.summarize(rounds, ["ours", "ib"])[0]["rounds"], 1)


PERF_LOG = """\
#  Rank  0 Group  0 Pid   1 on       host device  0 [0000:01:00] NVIDIA H100
#  Rank  1 Group  0 Pid   2 on       host device  0 [0000:01:00] NVIDIA H100
           8             2     float     sum      -1    62.62    0.00    0.00       0    63.55    0.00    0.00       0
    67108864      16777216     float     sum      -1   489299    0.14    0.14       0   476419    0.14    0.14       0
# Avg bus bandwidth    : 0.07
"""

ENVIRONMENT = """\
date: 2026-12-06T08:00:00Z
commit: abc1234
host: 6.8.0, Ubuntu 24.04
0, NVIDIA H100 80GB HBM3, 580.159.04
torch 2.11.0+cu130 nccl 2.28.9
plugin: /x
"""


class PortableCommand(unittest.TestCase):
    def test_paths_in_the_checkout_and_the_output_folder_hold_no_build_path(self):
        # The records ship in the packages' docs; package.deb refuses any file holding the build path.
        with unittest.mock.patch.dict(os.environ, {"OUT": "/root/out/"}):
            self.assertEqual(side_by_side.portable(str(side_by_side.REPO / "build/release")), "build/release")
            self.assertEqual(side_by_side.portable("/root/out/sbs2/x.json"), "$OUT/sbs2/x.json")
            self.assertEqual(side_by_side.portable("/opt/nccl/lib"), "/opt/nccl/lib")
            self.assertEqual(side_by_side.portable("/root/outside"), "/root/outside")


class Records(unittest.TestCase):
    def folder(self, d):
        Path(d, "environment.txt").write_text(ENVIRONMENT)
        Path(d, "all_reduce_perf-host.log").write_text(PERF_LOG)
        Path(d, "tp-allreduce-gdr-dmabuf.log").write_text(
            "slowest rank       174.2     196.5     225.6\nper token: Llama 3 70B, TP=8, batch 16, fp16: 160 "
            "all-reduces of 256 KiB; communication p50 27.87 ms, p99 30.00 ms\n")
        rows = [{"cell": "8", "bytes": 8, "dtype": "float32", "rounds": 3, "time_us": {"ours": 50.0},
                 "wrong": 0, "vs_netib": {"paired_ratio": 1.01, "interval": [0.97, 1.04], "verdict": "tie"},
                 "control": {"paired_ratio": 1.0, "interval": [0.95, 1.06]}}]
        Path(d, "side-by-side-host.json").write_text(json.dumps(
            {"kind": "side-by-side", "date": "2026-12-06T08:01:00Z", "command": "side_by_side.py --modes host",
             "method": {"rounds": 3, "order": "rotating", "control": True, "contenders": ["ours", "control", "netib"]},
             "groups": [{"mode": "host", "ranks": 2, "rows": rows}], "problems": []}))

    def test_a_folder_becomes_one_record_with_every_figure(self):
        with tempfile.TemporaryDirectory() as d:
            self.folder(d)
            rec = record.record(d)
        self.assertEqual((rec["gpu"], rec["driver"], rec["nccl"], rec["pytorch"], rec["commit"]),
                         ("NVIDIA H100 80GB HBM3", "580.159.04", "2.28.9", "2.11.0+cu130", "abc1234"))
        perf = rec["all_reduce_perf"][0]
        self.assertEqual((perf["mode"], perf["processes"], len(perf["rows"])), ("host", 2, 2))
        self.assertEqual(rec["tp_allreduce"][0]["ranks"], 8)
        self.assertEqual(rec["tp_allreduce"][0]["per_token_p50_ms"], 27.87)
        self.assertEqual(rec["side_by_side"][0]["groups"][0]["ranks"], 2)

    def test_results_table_makes_the_tables_from_records_and_guards_the_doc(self):
        rt = load_results_table()
        with tempfile.TemporaryDirectory() as d:
            self.folder(d)
            results = Path(d, "results")
            results.mkdir()
            Path(results, "2026-12-06-h100.json").write_text(json.dumps(record.record(d)))
            doc = Path(d, "benchmarks.md")
            doc.write_text(f"intro\n{rt.BEGIN}\nold typed table\n{rt.END}\nrest\n")
            run = lambda *a: subprocess.run([sys.executable, str(RESULTS_TABLE), "--results", str(results), *a],  # noqa: E731
                                            capture_output=True, text=True, timeout=HANG_BOUND_S)
            self.assertEqual(run("--check", str(doc)).returncode, 1, "a hand-typed table must fail the check")
            self.assertEqual(run("--write", str(doc)).returncode, 0)
            self.assertEqual(run("--check", str(doc)).returncode, 0)
            text = doc.read_text()
        self.assertTrue(text.startswith("intro\n") and text.endswith("rest\n"))
        self.assertIn("| 8 B | 50.0 | 1.01 [0.97, 1.04] tie | 1.00 [0.95, 1.06] |", text)
        self.assertIn("commit abc1234, NVIDIA H100 80GB HBM3, driver 580.159.04, NCCL 2.28.9", text)
        self.assertIn("| host-staged | 2 | 62.6 |", text)
        self.assertIn("| GPUDirect (dma-buf) | 8 | 174.2 | 196.5 | 225.6 | 27.87 ms |", text)

    def test_a_doc_without_markers_is_refused(self):
        rt = load_results_table()
        with self.assertRaises(ValueError):
            rt.splice("no markers here\n", "table\n")


class Docs(unittest.TestCase):
    def test_benchmarks_md_holds_the_tables_docs_results_gives(self):
        p = subprocess.run([sys.executable, str(RESULTS_TABLE), "--check", str(REPO / "docs" / "benchmarks.md")],
                           capture_output=True, text=True, timeout=HANG_BOUND_S)
        self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
    unittest.main()
