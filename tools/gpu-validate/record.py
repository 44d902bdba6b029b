#!/usr/bin/env python3
"""record.py OUT: one machine-readable record of a scripts/gpu-validate.sh run, OUT/record.json.

It holds what the run was (date, commit, command's steps), where (GPU, driver, NCCL and PyTorch
versions, from OUT/environment.txt) and every figure it produced: collectives.py's rows, every
size of nccl-tests' all_reduce_perf, tp_allreduce.py's percentiles and per-token line, and the
side-by-side records (side_by_side.py) with their ratios, intervals and verdicts. Copied into
docs/results/, records are what scripts/results-table makes docs/benchmarks.md's tables from.
"""

import glob
import json
import os
import re
import sys
from pathlib import Path

from summarize import perf_rows


def environment(folder):
    """The facts environment.txt holds (gpu-validate.sh writes it first)."""
    facts = {}
    path = os.path.join(folder, "environment.txt")
    if not os.path.exists(path):
        return facts
    for line in Path(path).read_text(errors="replace").splitlines():
        line = line.strip()
        if line.startswith("date: "):
            facts["date"] = line[6:]
        elif line.startswith("commit: "):
            facts["commit"] = line[8:]
        elif line.startswith("host: "):
            facts["kernel_os"] = line[6:]
        elif line.startswith("torch "):
            m = re.match(r"torch (\S+) nccl (\S+)", line)
            if m:
                facts["pytorch"], facts["nccl"] = m.groups()
        elif re.match(r"^\d+, ", line) and "gpu" not in facts:
            _, gpu, driver = (s.strip() for s in line.split(",", 2))
            facts["gpu"], facts["driver"] = gpu, driver
    return facts


def tp_row(path):
    text = Path(path).read_text(errors="replace")
    m = re.search(r"slowest rank\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", text)
    line = re.search(r"^per token: .*$", text, re.M)
    p50 = re.search(r"communication p50 ([\d.]+) ms", text)
    world = re.search(r"TP=(\d+)", text)
    return {"mode": re.sub(r"^tp-allreduce-|\.log$", "", os.path.basename(path)), "passed": m is not None,
            "ranks": int(world.group(1)) if world else None,
            "slowest_us": {"p50": float(m.group(1)), "p90": float(m.group(2)), "p99": float(m.group(3))} if m else None,
            "per_token_p50_ms": float(p50.group(1)) if p50 else None,
            "per_token_line": line.group(0) if line else None}


def record(folder):
    rec = {"kind": "gpu-validate", **environment(folder)}
    rec["collectives"] = []
    for path in sorted(glob.glob(os.path.join(folder, "collectives-*.json"))):
        d = json.loads(Path(path).read_text())
        mode = re.sub(r"^collectives-|\.json$", "", os.path.basename(path))
        rec["collectives"].append({"mode": mode, **d})
    rec["all_reduce_perf"] = []
    for path in sorted(glob.glob(os.path.join(folder, "all_reduce_perf-*.log"))):
        rows, footer = perf_rows(path)
        mode = re.sub(r"^all_reduce_perf-|\.log$", "", os.path.basename(path))
        ranks = re.findall(r"#\s+Rank\s+\d+\s+Group", Path(path).read_text(errors="replace"))
        rec["all_reduce_perf"].append({
            "mode": mode, "processes": len(ranks) or None, "footer": footer,
            "rows": [{"bytes": size, "time_us": t, "busbw_gbs": bw, "wrong": wrong}
                     for size, (t, bw, wrong) in sorted(rows.items())]})
    rec["tp_allreduce"] = [tp_row(p) for p in sorted(glob.glob(os.path.join(folder, "tp-allreduce-*.log")))]
    rec["side_by_side"] = [json.loads(Path(p).read_text()) for p in sorted(glob.glob(os.path.join(folder, "side-by-side-*.json")))]
    return rec


def main(argv):
    if len(argv) != 2:
        print("usage: record.py <gpu-validate output folder>", file=sys.stderr)
        return 2
    rec = record(argv[1])
    with open(os.path.join(argv[1], "record.json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
