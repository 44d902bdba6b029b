"""bench-vs-netib with a stand-in roce-bench: the pairing of each round's two runs, the interval of
the paired ratio, the verdict per cell, and a failed run."""

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

REPO = Path(os.environ.get("ROCE_REPO", Path(__file__).resolve().parents[2]))
SCRIPT = REPO / "scripts" / "bench-vs-netib"


def load_script():
    loader = importlib.machinery.SourceFileLoader("bench_vs_netib", str(SCRIPT))
    spec = importlib.util.spec_from_loader("bench_vs_netib", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


# A roce-bench that runs nothing: it writes the JSON report bench-vs-netib reads. Its times come
# from STUB_TIMES (JSON: {"ours": {size: [per call]}, "net_ib": {...}, "control": {...}}), one entry
# per call of that plugin in the order the calls come, so a test decides every round's figures;
# "control" is this plugin loaded by path (--control). STUB_FAIL=1 makes a run fail.
# Each call's arguments are appended, one JSON list per line, to STUB_ARGS.
STUB = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, sys
    args = sys.argv[1:]
    out = next(a.split("=", 1)[1] for a in args if a.startswith("--json="))
    assert "--vroce-sysfs" in args, args
    who = "ours"
    if "--plugin" in args:
        path = args[args.index("--plugin") + 1]
        who = "control" if path.endswith("libnccl-net-roce.so") else "net_ib"
    with open(os.environ["STUB_ARGS"], "a") as log:
        log.write(json.dumps(args) + "\\n")
    state = os.environ["STUB_STATE"]
    calls = json.load(open(state)) if os.path.exists(state) else {}
    n = calls.get(who, 0)
    calls[who] = n + 1
    json.dump(calls, open(state, "w"))
    if os.environ.get("STUB_FAIL") == "1":
        json.dump({"status": "fail", "series": []}, open(out, "w"))
        print("stub: a wrong element", file=sys.stderr)
        sys.exit(1)
    times = json.loads(os.environ["STUB_TIMES"])[who]
    rows = [{"size": int(size), "time_us": per_call[n]} for size, per_call in times.items()]
    json.dump({"status": "pass", "series": [{"rows": rows}]}, open(out, "w"))
""")


class Statistics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = load_script()

    def test_a_steady_gap_is_slower_or_faster(self):
        ours = [12.0, 12.1, 11.9, 12.2, 12.0, 11.8, 12.1]
        theirs = [10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 10.0]
        ratio, lo, hi = self.m.paired_interval(ours, theirs)
        self.assertAlmostEqual(ratio, 1.2, delta=0.02)
        self.assertGreater(lo, 1.0)
        self.assertLessEqual(lo, ratio)
        self.assertGreaterEqual(hi, ratio)
        self.assertEqual(self.m.verdict(lo, hi), "slower")
        _, lo, hi = self.m.paired_interval(theirs, ours)
        self.assertEqual(self.m.verdict(lo, hi), "faster")

    def test_rounds_that_disagree_are_a_tie(self):
        ours = [10.0, 12.0, 9.0, 11.5, 9.5, 12.5, 10.0]
        theirs = [11.0, 10.0, 10.5, 10.0, 11.0, 10.0, 10.5]
        _, lo, hi = self.m.paired_interval(ours, theirs)
        self.assertLess(lo, 1.0)
        self.assertGreater(hi, 1.0)
        self.assertEqual(self.m.verdict(lo, hi), "tie")

    def test_the_interval_is_the_same_every_time(self):
        ours = [10.0, 12.0, 9.0, 11.5, 9.5]
        theirs = [11.0, 10.0, 10.5, 10.0, 11.0]
        self.assertEqual(self.m.paired_interval(ours, theirs), self.m.paired_interval(ours, theirs))

    def test_no_rounds_give_no_verdict(self):
        self.assertEqual(self.m.paired_interval([], []), (None, None, None))
        self.assertEqual(self.m.verdict(None, None), "-")

    def test_a_verdict_with_a_control_must_clear_it(self):
        self.assertEqual(self.m.verdict(1.05, 1.08, (0.99, 1.04)), "slower")
        self.assertEqual(self.m.verdict(1.02, 1.05, (0.99, 1.04)), "tie")
        self.assertEqual(self.m.verdict(0.90, 0.95, (0.96, 1.02)), "faster")
        self.assertEqual(self.m.verdict(0.90, 0.97, (0.96, 1.02)), "tie")
        # A control wholly on one side still leaves 1.00 as the bound on the other.
        self.assertEqual(self.m.verdict(1.01, 1.03, (0.95, 0.98)), "slower")
        self.assertEqual(self.m.verdict(1.01, 1.03, (None, None)), "slower")

    def test_three_runs_go_through_all_six_orders(self):
        runs = ["a", "b", "c"]
        orders = {tuple(self.m.round_order(runs, r)) for r in range(6)}
        self.assertEqual(len(orders), 6)
        self.assertEqual(self.m.round_order(["a", "b"], 0), ["a", "b"])
        self.assertEqual(self.m.round_order(["a", "b"], 1), ["b", "a"])


class EndToEnd(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="bench-vs-netib-test."))
        self.addCleanup(shutil.rmtree, self.dir, True)
        (self.dir / "build" / "bin").mkdir(parents=True)
        (self.dir / "build" / "vroce" / "lib").mkdir(parents=True)
        bench = self.dir / "build" / "bin" / "roce-bench"
        bench.write_text(STUB)
        bench.chmod(0o755)
        self.netib = self.dir / "libnccl-net.so"
        self.netib.write_bytes(b"")

    def run_script(self, times, rounds, fail=False, extra=()):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "STUB_TIMES": json.dumps(times),
               "STUB_STATE": str(self.dir / "calls.json"), "STUB_FAIL": "1" if fail else "0",
               "STUB_ARGS": str(self.dir / "args.jsonl")}
        report = self.dir / "report.json"
        p = subprocess.run([sys.executable, str(SCRIPT), "--netib", str(self.netib), "--build",
                            str(self.dir / "build"), "--rounds", str(rounds), "--modes", "bw",
                            "--json", str(report), *extra],
                           env=env, capture_output=True, text=True, timeout=120)
        doc = json.loads(report.read_text()) if report.exists() else None
        return p, doc

    def test_each_cell_pairs_the_rounds_and_names_a_verdict(self):
        rounds = 7
        times = {
            # 8 B: ours a steady 20% slower; 64 B: ours faster in some rounds, slower in others
            "ours": {"8": [12.0, 12.1, 11.9, 12.2, 12.0, 11.8, 12.1],
                     "64": [10.0, 12.0, 9.0, 11.5, 9.5, 12.5, 10.0]},
            "net_ib": {"8": [10.0] * rounds, "64": [11.0, 10.0, 10.5, 10.0, 11.0, 10.0, 10.5]},
        }
        p, doc = self.run_script(times, rounds)
        self.assertEqual(p.returncode, 0, p.stderr)
        cells = {r["size"]: r for r in doc}
        self.assertEqual(cells[8]["verdict"], "slower")
        self.assertEqual(cells[64]["verdict"], "tie")
        self.assertEqual(cells[8]["rounds"], rounds)
        # The pairs are the stub's figures round by round, whichever plugin ran first.
        self.assertEqual(cells[8]["ours_rounds_us"], times["ours"]["8"])
        self.assertEqual(cells[64]["netib_rounds_us"], times["net_ib"]["64"])
        self.assertAlmostEqual(cells[8]["ratio"], 1.2, places=3)
        self.assertIn("# slower beyond the spread of the rounds: 1 of 2 cells; bw 8 B", p.stdout)
        row8 = next(l for l in p.stdout.splitlines() if l.startswith("bw") and l.split()[1] == "8")
        self.assertTrue(row8.endswith("slower"), row8)

    def stub_calls(self):
        return [json.loads(line) for line in (self.dir / "args.jsonl").read_text().splitlines()]

    def test_sizes_and_iterations_reach_roce_bench(self):
        times = {"ours": {"4096": [5.0, 5.0]}, "net_ib": {"4096": [5.0, 5.0]}}
        p, _ = self.run_script(times, 2, extra=["--min-bytes", "4K", "--max-bytes", "256K",
                                                "--iters", "1000"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("1000 iterations per cell", p.stdout)
        calls = self.stub_calls()
        self.assertEqual(len(calls), 4)  # two rounds, both plugins
        for args in calls:
            opt = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("-")}
            self.assertEqual((opt["-b"], opt["-e"], opt["-n"], opt["-w"]), ("4K", "256K", "1000", "100"))

    def test_without_iters_roce_bench_chooses(self):
        times = {"ours": {"8": [5.0]}, "net_ib": {"8": [5.0]}}
        p, _ = self.run_script(times, 1)
        self.assertEqual(p.returncode, 0, p.stderr)
        for args in self.stub_calls():
            self.assertNotIn("-n", args)
            self.assertNotIn("-w", args)
            self.assertEqual(args[args.index("-b") + 1], "8")

    def who_ran(self):
        """Each stub call's plugin, in call order: ours, net_ib or control."""
        names = []
        for args in self.stub_calls():
            if "--plugin" not in args:
                names.append("ours")
            else:
                path = args[args.index("--plugin") + 1]
                names.append("control" if path.endswith("libnccl-net-roce.so") else "net_ib")
        return names

    def add_plugin_file(self):
        lib = self.dir / "build" / "lib"
        lib.mkdir(parents=True)
        (lib / "libnccl-net-roce.so").write_bytes(b"")
        return lib / "libnccl-net-roce.so"

    def test_the_control_runs_this_plugin_again_in_every_order(self):
        plugin = self.add_plugin_file()
        times = {who: {"8": [5.0] * 6} for who in ("ours", "net_ib", "control")}
        p, doc = self.run_script(times, 6, extra=["--control"])
        self.assertEqual(p.returncode, 0, p.stderr)
        names = self.who_ran()
        rounds = [tuple(names[i:i + 3]) for i in range(0, len(names), 3)]
        self.assertEqual(len(set(rounds)), 6, rounds)  # six rounds, six different orders
        for name, args in zip(names, self.stub_calls()):
            if name == "control":
                self.assertEqual(args[args.index("--plugin") + 1], str(plugin.resolve()))
        self.assertEqual(doc[0]["control_rounds_us"], [5.0] * 6)
        self.assertIn("control", p.stdout)

    def test_a_gap_within_the_controls_spread_is_a_tie(self):
        self.add_plugin_file()
        rounds = 9
        # ours is a steady 3% over net_ib in both cells; the control (ours again) reads 3-8% over
        # ours at 8 B but agrees with it at 64 B, so only 64 B is a difference of the plugins.
        times = {"ours": {"8": [10.3] * rounds, "64": [10.3] * rounds},
                 "net_ib": {"8": [10.0] * rounds, "64": [10.0] * rounds},
                 "control": {"8": [9.6, 9.7, 9.9, 9.5, 9.6, 9.8, 9.7, 9.5, 9.6],
                             "64": [10.3, 10.31, 10.29, 10.3, 10.3, 10.31, 10.29, 10.3, 10.3]}}
        p, doc = self.run_script(times, rounds, extra=["--control"])
        self.assertEqual(p.returncode, 0, p.stderr)
        cells = {r["size"]: r for r in doc}
        self.assertGreater(cells[8]["interval"][0], 1.0)  # on its own it would read "slower"
        self.assertEqual(cells[8]["verdict"], "tie")
        self.assertGreater(cells[8]["control_interval"][1], cells[8]["interval"][0])
        self.assertEqual(cells[64]["verdict"], "slower")

    def test_the_control_needs_the_plugin_built(self):
        times = {"ours": {"8": [5.0]}, "net_ib": {"8": [5.0]}}
        p, _ = self.run_script(times, 1, extra=["--control"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("libnccl-net-roce.so does not exist", p.stderr)

    def test_a_failed_run_is_exit_1_with_its_error(self):
        p, _ = self.run_script({"ours": {}, "net_ib": {}}, 1, fail=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("stub: a wrong element", p.stderr)


if __name__ == "__main__":
    unittest.main()
