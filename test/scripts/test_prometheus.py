"""The plugin's statistics in the tools operators already run: a roce-bench run over vroce with
NCCL_ROCE_STATS_FILE writes one .prom file per rank; promtool (Debian prometheus) must accept
each file, node_exporter's textfile collector (Debian prometheus-node-exporter), started on a
loopback port with the statistics folder as its textfile directory, must serve the plugin's
series without a scrape error, and contrib/grafana's dashboard must query only series that are
written (and have a panel for each). NCCL_ROCE_STATS=1 must say where the files go even without
NCCL_DEBUG=INFO. Missing packages skip their test with a message (scripts/install-deps.sh
installs them)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request
from pathlib import Path

from scripttest import HANG_BOUND_S, REPO

ROCE_BENCH = os.environ.get("ROCE_TEST_ROCE_BENCH", "")
VROCE_LIB_DIR = os.environ.get("ROCE_TEST_VROCE_LIB_DIR", "")
ADDR = os.environ.get("ROCE_TEST_ADDRESSES", "").split()
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
PROMTOOL = shutil.which("promtool")
DASHBOARD = REPO / "contrib/grafana/nccl-roce.json"
# Metrics the dashboard may query that node_exporter itself serves.
NODE_EXPORTER_METRICS = {"node_textfile_mtime_seconds"}
PROMQL_WORDS = {"sum", "max", "min", "avg", "by", "without", "rate", "increase", "topk", "time",
                "label_values", "on", "ignoring", "count"}


def family_names(prom_text):
    return {line.split()[2] for line in prom_text.splitlines() if line.startswith("# TYPE ")}


def dashboard_queries(doc):
    """Every PromQL text of the dashboard: panel targets and template variable queries."""
    out = []
    for panel in doc["panels"]:
        out += [t["expr"] for t in panel.get("targets", [])]
    for var in doc["templating"]["list"]:
        q = var.get("query")
        if isinstance(q, dict):
            out.append(q["query"])
    return out


def metric_names(expr):
    """The metric names a PromQL text refers to (identifiers not inside a string, not a keyword,
    not a label name inside braces or by (...))."""
    text = re.sub(r"label_values\((.*),\s*\w+\s*\)", r"\1", expr)  # label_values(metric, label)
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)           # strings
    text = re.sub(r"\{[^}]*\}", "{}", text)                   # label matchers
    text = re.sub(r"\b(by|without)\s*\([^)]*\)", "", text)    # grouping labels
    text = re.sub(r"\[[^\]]*\]", "", text)                    # ranges
    names = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text))
    return {n for n in names if n not in PROMQL_WORDS and not n.startswith("__")} - {"label_values"}


@unittest.skipUnless(ROCE_BENCH and VROCE_LIB_DIR, "roce-bench or vroce is not part of this build")
class PrometheusOutput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        assert ADDR, "ROCE_TEST_ADDRESSES is not set: run under test/support's with_test_addresses"
        cls._tmp = tempfile.TemporaryDirectory(prefix="ok-prom-")
        cls.dir = Path(cls._tmp.name)
        os.chmod(cls.dir, 0o755)  # node_exporter may run as another user
        sysfs = cls.dir / "sys"
        stats = cls.dir / "stats"
        stats.mkdir()
        cls.stats = stats
        env = {
            "PATH": "/usr/bin:/bin", "HOME": str(cls.dir), "LANG": "C.UTF-8",
            "NCCL_IBVERBS_LIB": str(Path(VROCE_LIB_DIR) / "libibverbs.so.1"),
            "VROCE_DEVICES": ",".join(f"prm{i}={ADDR[i]}" for i in range(4)),
            # vroce writes its port counters there and the plugin reads them: the port family.
            "VROCE_SYSFS_ROOT": str(sysfs), "NCCL_ROCE_SYSFS_ROOT": str(sysfs),
            "NCCL_ROCE_STATS_FILE": str(stats / "roce.%h.%p.jsonl"),
            "NCCL_ROCE_STATS_INTERVAL_MS": "100",
            "NCCL_ROCE_STATS": "1",
            "NCCL_DEBUG": "WARN",
        }
        p = subprocess.run([ROCE_BENCH, "-m", "pingpong", "-b", "8", "-e", "4K", "-f", "512", "-n", "50",
                            "--rendezvous", f"{ADDR[0]}:0"],
                           env=env, capture_output=True, text=True, timeout=HANG_BOUND_S)
        cls.bench = p
        cls.proms = sorted(stats.glob("roce.*.jsonl.prom"))

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def setUp(self):
        out = self.bench.stdout + self.bench.stderr
        self.assertEqual(self.bench.returncode, 0, out[-3000:])
        self.assertGreaterEqual(len(self.proms), 2, f"no .prom file per rank in {sorted(os.listdir(self.stats))}")

    def test_stats_destination_is_said_without_nccl_debug_info(self):
        out = self.bench.stdout + self.bench.stderr
        self.assertRegex(out, r"NET/RoCE statistics every 100 ms to \S+/stats/roce\.\S+\.jsonl \(JSON lines")
        self.assertIn(".jsonl.prom (Prometheus text", out)
        self.assertIn("NCCL_ROCE_STATS=1: one summary per comm at its close", out)

    def test_every_file_has_the_plugins_families_and_no_temporary_file_is_left(self):
        for prom in self.proms:
            text = prom.read_text()
            for family in ("nccl_roce_comm_messages_total", "nccl_roce_comm_bytes_total",
                           "nccl_roce_comm_completion_seconds", "nccl_roce_port_increase_total"):
                self.assertIn(f"\n{family}{{", text, prom)
        self.assertEqual(list(self.stats.glob("*.tmp")), [])

    @unittest.skipUnless(PROMTOOL, "promtool not found: install Debian's prometheus (scripts/install-deps.sh)")
    def test_promtool_accepts_every_file(self):
        for prom in self.proms:
            p = subprocess.run([PROMTOOL, "check", "metrics"], input=prom.read_text(), capture_output=True,
                               text=True, timeout=HANG_BOUND_S)
            self.assertEqual(p.returncode, 0, f"{prom}: {p.stdout}{p.stderr}")

    @unittest.skipUnless(NODE_EXPORTER, "node_exporter not found: install Debian's prometheus-node-exporter "
                                        "(scripts/install-deps.sh)")
    def test_node_exporter_serves_the_series_and_the_dashboard_queries_only_them(self):
        metrics = self.scrape()
        self.assertRegex(metrics, r"(?m)^node_textfile_scrape_error 0$")
        for prom in self.proms:
            self.assertIn(f'node_textfile_mtime_seconds{{file="{prom}"}}', metrics)
        served = family_names(metrics)
        written = set().union(*(family_names(p.read_text()) for p in self.proms))
        self.assertTrue(written <= served, f"not served: {written - served}")
        # Every series of the plugin's, with its labels: a sample line per rank and comm.
        for line in (l for p in self.proms for l in p.read_text().splitlines() if l and l[0] != "#"):
            name = line.split("{", 1)[0]
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line.split("}", 1)[0]))
            wanted = [f'{k}="{v}"' for k, v in sorted(labels.items())]
            found = [l for l in metrics.splitlines() if l.startswith(name + "{") and all(w in l for w in wanted)]
            self.assertTrue(found, f"node_exporter does not serve {line}")
        self.check_dashboard(written, served)

    def check_dashboard(self, written, served):
        doc = json.loads(DASHBOARD.read_text())
        queries = dashboard_queries(doc)
        self.assertTrue(queries)
        used = set().union(*(metric_names(q) for q in queries))
        for name in used:
            if name.startswith("nccl_roce_"):
                self.assertIn(name, written, f"{DASHBOARD.name} queries {name}, which the plugin does not write")
            else:
                self.assertIn(name, NODE_EXPORTER_METRICS & served, f"{DASHBOARD.name} queries unknown {name}")
        self.assertEqual(written - used, set(), f"series without a panel in {DASHBOARD.name}")
        # Label values the dashboard selects exist in the output.
        all_text = "".join(p.read_text() for p in self.proms)
        for value in ("50", "99"):
            self.assertIn(f'percentile="{value}"', all_text)

    def scrape(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = open(self.dir / "node_exporter.log", "w")
        self.addCleanup(log.close)
        proc = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                                 f"--collector.textfile.directory={self.stats}",
                                 "--collector.disable-defaults", "--collector.textfile"],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def stop():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        self.addCleanup(stop)
        deadline = time.monotonic() + HANG_BOUND_S
        last = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    return r.read().decode()
            except OSError as e:
                last = e
                time.sleep(0.2)
        self.fail(f"node_exporter did not answer on 127.0.0.1:{port} ({last}, exit {proc.poll()}): "
                  + (self.dir / "node_exporter.log").read_text()[-2000:])


class DashboardFile(unittest.TestCase):
    """Without a run: the dashboard parses and names only the plugin's families."""

    def test_dashboard_parses_and_queries_known_families(self):
        doc = json.loads(DASHBOARD.read_text())
        self.assertEqual(doc["uid"], "nccl-net-roce")
        header = (REPO / "plugin/telemetry/stats_output.h").read_text()
        families = set(re.findall(r'\{"(nccl_roce_\w+)", "(?:counter|gauge)"', header))
        self.assertGreaterEqual(len(families), 7, header)
        used = set().union(*(metric_names(q) for q in dashboard_queries(doc)))
        self.assertEqual({n for n in used if n.startswith("nccl_roce_")} - families, set())
        self.assertEqual(families - used, set())
        self.assertEqual(used - families, NODE_EXPORTER_METRICS)
        ids = [p["id"] for p in doc["panels"]]
        self.assertEqual(len(ids), len(set(ids)))


if __name__ == "__main__":
    unittest.main()
