"""scripts/roce-plot on the JSON the suite's tools write: roce-bench's (the runs behind the images
in docs/images), gpu-validate's collectives and bench-vs-netib's. A PNG of the expected size comes
out; a malformed, unknown or empty file fails with a message naming it and what roce-plot reads.
Skipped when the script's interpreter has no matplotlib (Debian's python3-matplotlib)."""

import json
import os
import struct
import subprocess
import tempfile
import unittest
from pathlib import Path

REPO = Path(os.environ.get("ROCE_REPO", Path(__file__).resolve().parents[2]))
SCRIPT = REPO / "scripts" / "roce-plot"
IMAGES = REPO / "docs" / "images"


def interpreter():
    return SCRIPT.read_text().splitlines()[0][2:].split()


def has_matplotlib():
    try:
        return subprocess.run([*interpreter(), "-c", "import matplotlib"],
                              capture_output=True).returncode == 0
    except OSError:
        return False


def png_size(path):
    """(width, height) from a PNG's IHDR, after checking its signature."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise AssertionError(f"{path} is not a PNG")
    return struct.unpack(">II", data[16:24])


COLLECTIVES = {"world": 2, "nccl": "2.21.5", "network": "RoCE", "gdr_channels": 2, "channels": 2,
               "passed": True,
               "rows": [{"op": "all_reduce", "dtype": "float32", "bytes": b, "count": b // 4,
                         "time_us": 20.0 + b / 1e3, "algbw_gbs": b / (20.0 + b / 1e3) / 1e3,
                         "busbw_gbs": b / (20.0 + b / 1e3) / 1e3, "wrong": 0}
                        for b in (8, 1024, 65536, 1 << 20)]}
NETIB = [{"case": "pingpong", "size": b, "ours_us": 10.0 + b / 1e3, "netib_us": 11.0 + b / 1e3}
         for b in (8, 512, 32768)]


@unittest.skipUnless(has_matplotlib(), "roce-plot's interpreter has no matplotlib "
                     "(install Debian's python3-matplotlib)")
class RocePlot(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def run_plot(self, *args):
        return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                              timeout=120)

    def write(self, name, doc):
        path = self.dir / name
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def test_roce_bench_json_makes_a_png(self):
        inputs = sorted(IMAGES.glob("*.json"))
        self.assertTrue(inputs, f"no roce-bench JSON in {IMAGES}")
        for source in inputs:
            doc = json.loads(source.read_text())
            self.assertEqual(doc["tool"], "roce-bench", source)
            out = self.dir / (source.stem + ".png")
            p = self.run_plot("-o", out, source)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(png_size(out), (1100, 440))
            series = len([s for s in doc["series"] if s["rows"]])
            self.assertIn(f"{series} series from 1 file(s)", p.stdout)

    def test_every_kind_together(self):
        source = sorted(IMAGES.glob("*.json"))[0]
        out = self.dir / "all.png"
        p = self.run_plot("--title", "all kinds", "-o", out, source,
                          self.write("collectives-gdr-dmabuf.json", COLLECTIVES),
                          self.write("netib.json", NETIB))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(png_size(out), (1100, 440))

    def test_malformed_json_is_named(self):
        bad = self.write("bad.json", '{"tool": "roce-bench", "series": [')
        p = self.run_plot("-o", self.dir / "x.png", bad)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"roce-plot: {bad}: not JSON", p.stderr)
        self.assertFalse((self.dir / "x.png").exists())

    def test_unknown_and_empty_documents_are_named(self):
        cases = [
            ({"hello": 1}, "JSON of an unknown kind"),
            ({"tool": "roce-bench", "mode": "bw", "series": [], "status": "fail",
              "error": "rank 1 exited"}, "holds no rows (status fail: rank 1 exited)"),
            ({"tool": "roce-bench", "mode": "tp"}, "-m tp has no rows per size"),
            ({"tool": "roce-bench", "mode": "bw",
              "series": [{"label": "plugin", "rows": [{"size": 8}]}]}, "without a number in 'time_us'"),
            (dict(COLLECTIVES, rows=[{"op": "broadcast", "dtype": "float16", "bytes": 8}]),
             "no all_reduce float32 rows (it has: broadcast float16)"),
        ]
        for doc, message in cases:
            path = self.write("case.json", doc)
            p = self.run_plot("-o", self.dir / "x.png", path)
            self.assertEqual(p.returncode, 1, (doc, p.stderr))
            self.assertIn(message, p.stderr)

    def test_usage(self):
        p = self.run_plot("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("usage: roce-plot", p.stdout)
        p = self.run_plot("-o", "out.svg", self.write("n.json", NETIB))
        self.assertEqual(p.returncode, 2)
        self.assertIn("roce-plot writes PNG", p.stderr)
        p = self.run_plot("-o", self.dir / "x.png", self.dir / "missing.json")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read it", p.stderr)


if __name__ == "__main__":
    unittest.main()
