"""scripts/roce_stats: the cross-rank table from the plugin's statistics files (newest record of
each comm, slowest link first, the verdict naming it) and its input errors."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from scripttest import HANG_BOUND_S, REPO

TOOL = REPO / "scripts/roce_stats"


def record(rank, comm, direction, peer, p99, p50=10.0, cts_p99=None, errors=0, stalls=0, time=1.0,
           messages=1000, fabric=None):
    r = {"time": time, "host": f"node{rank}", "pid": 100 + rank, "rank": str(rank), "comm": comm,
         "direction": direction, "device": "mlx5_0", "peer": peer, "qps": 1, "traffic_class": 106,
         "closed": False, "age_s": 5.0, "messages": messages, "bytes": messages * 4096, "errors": errors,
         "stall_warnings": stalls, "completion_us": {"count": messages, "p50": p50, "p90": p99, "p99": p99,
                                                      "max": p99}, "completion_buckets_ns": []}
    if fabric is not None:
        r["fabric_verdict"] = fabric
    if direction == "send":
        r["cts_wait_us"] = {"count": messages, "p50": 0.0, "p90": 0.0, "p99": cts_p99 or 0.0, "max": 0.0}
    return json.dumps(r) + "\n"


class RoceStats(unittest.TestCase):
    def run_tool(self, *args):
        return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=HANG_BOUND_S)

    def write(self, d, name, *lines):
        path = Path(d) / name
        path.write_text("".join(lines))
        return path

    def test_slowest_link_first_and_named(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "r0.jsonl", record(0, 1, "send", "10.0.0.2", 20.0),
                       record(0, 2, "recv", "10.0.0.4", 22.0))
            # rank 1's send comm: an old record, then the newest one, which must win.
            self.write(d, "r1.jsonl", record(1, 1, "send", "10.0.0.3", 5.0, time=1.0),
                       record(1, 1, "send", "10.0.0.3", 900.0, time=2.0), "not json\n")
            r = self.run_tool(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertTrue(lines[0].startswith("rank"))
        self.assertEqual(lines[1].split()[:3], ["1", "send", "10.0.0.3"], lines[1])
        self.assertIn("900.0", lines[1])
        self.assertEqual(len([l for l in lines if l.startswith(("0 ", "1 "))]), 3)
        self.assertIn("(1 line(s) could not be parsed and were skipped)", r.stdout)
        self.assertIn("slowest link: rank 1 -> 10.0.0.3 on mlx5_0, p99 900.0 us (40.9x the median link's p99); "
                      "the time is on the wire or in the peer's NIC", lines[-1])

    def test_a_late_receiver_and_errors_change_the_verdict_and_exit_status(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "a.jsonl", record(0, 1, "send", "10.0.0.2", 800.0, cts_p99=700.0),
                       record(1, 1, "recv", "10.0.0.1", 30.0))
            r = self.run_tool(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("mostly wait for the peer's clear-to-send", r.stdout)
            self.write(d, "b.jsonl", record(2, 1, "recv", "10.0.0.1", 9000.0, stalls=2))
            r = self.run_tool("--json", str(Path(d) / "*.jsonl"))
            self.assertEqual(r.returncode, 1)
            doc = json.loads(r.stdout)
            self.assertEqual(doc["rows"][0]["rank"], "2")
            self.assertIn("2 stall warning(s)", doc["verdict"])

    def test_the_ports_fabric_verdict_names_congestion_or_loss(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "a.jsonl", record(0, 1, "send", "10.0.0.2", 800.0, fabric="congestion"),
                       record(1, 1, "recv", "10.0.0.1", 30.0, fabric="none"))
            r = self.run_tool(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("the time is on the wire: its port counted congestion since init", r.stdout)
            self.write(d, "a.jsonl", record(0, 1, "send", "10.0.0.2", 800.0, fabric="none"),
                       record(1, 1, "recv", "10.0.0.1", 30.0, fabric="none"))
            r = self.run_tool(d)
            self.assertIn("the time is on the wire or in the peer's NIC: check that port's counters", r.stdout)

    def test_links_alike_blame_no_link_and_one_link_is_not_compared(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "a.jsonl", record(0, 1, "send", "10.0.0.2", 31.0),
                       record(1, 1, "recv", "10.0.0.1", 30.0), record(2, 1, "send", "10.0.0.3", 29.0))
            r = self.run_tool(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            verdict = r.stdout.splitlines()[-1]
            self.assertIn("no link stands out (every p99 within 2x the median)", verdict)
            self.assertNotIn("wire", verdict)
            self.write(d, "a.jsonl", record(0, 1, "send", "10.0.0.2", 800.0))
            r = self.run_tool(d)
            verdict = r.stdout.splitlines()[-1]
            self.assertIn("one link only: nothing to compare it with", verdict)
            self.assertNotIn("wire", verdict)

    def test_long_peer_and_device_names_are_never_cut(self):
        peer = "fd00:1234:5678:9abc:def0:1234:5678:9abc port 47011"
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "a.jsonl", record(0, 1, "send", peer, 40.0).replace("mlx5_0", "mlx5_bond_0"),
                       record(1, 1, "recv", "10.0.0.1", 30.0))
            r = self.run_tool(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        row = next(l for l in lines if l.startswith("0 "))
        self.assertIn(f" {peer} ", row)
        self.assertIn(" mlx5_bond_0 ", row)
        # The columns still line up: every number column ends where the header's does.
        self.assertEqual(len(row), len(lines[0]), (lines[0], row))

    def test_sort_by_clear_to_send_wait(self):
        with tempfile.TemporaryDirectory() as d:
            f = self.write(d, "a.jsonl", record(0, 1, "send", "A", 800.0, cts_p99=1.0),
                           record(1, 1, "send", "B", 100.0, cts_p99=90.0))
            r = self.run_tool("--sort", "cts", str(f))
        self.assertTrue(r.stdout.splitlines()[1].startswith("1 "), r.stdout)

    def test_bad_input(self):
        r = self.run_tool("/nonexistent/roce.jsonl")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no statistics files", r.stderr)
        with tempfile.TemporaryDirectory() as d:
            f = self.write(d, "x.jsonl", "garbage\n{}\n")
            r = self.run_tool(str(f))
        self.assertEqual(r.returncode, 2)
        self.assertIn("nothing parsable", r.stderr)


if __name__ == "__main__":
    unittest.main()
