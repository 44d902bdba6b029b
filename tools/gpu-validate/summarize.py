"""Summarises a scripts/gpu-validate.sh output folder as Markdown tables.

Reads collectives-<mode>.json (tools/gpu-validate/collectives.py), all_reduce_perf-<mode>.log
(nccl-tests' table) and tp-allreduce-<mode>.log (examples/tp_allreduce.py), and prints, per
mode, the figures docs/benchmarks.md records: all-reduce latency at 8 B and 256 KiB, bus bandwidth
at 64 MiB, wrong elements, and whether GPUDirect was on every network channel.
"""

import glob
import json
import os
import re
import sys

MODES = ("gdr-dmabuf", "gdr-pointer", "host", "socket")
MODE_TEXT = {
    "gdr-dmabuf": "plugin, GPUDirect (dma-buf)",
    "gdr-pointer": "plugin, GPUDirect (pointer)",
    "host": "plugin, host-staged",
    "socket": "NCCL Socket (TCP)",
}


def perf_rows(path):
    """nccl-tests rows: size -> (out-of-place time us, busbw GB/s, wrong) plus the footer lines."""
    rows, footer = {}, []
    with open(path, errors="replace") as f:
        for line in f:
            cols = line.split()
            if len(cols) >= 13 and cols[0].isdigit() and cols[2] in ("float", "half", "bfloat16", "int32"):
                wrong = cols[8]
                rows[int(cols[0])] = (float(cols[5]), float(cols[7]), int(wrong) if wrong.isdigit() else wrong)
            elif "Out of bounds" in line or "Avg bus bandwidth" in line:
                footer.append(line.strip("# \n"))
    return rows, footer


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main(folder):
    print(f"# gpu-validate results ({os.path.basename(folder.rstrip('/'))})\n")
    env = os.path.join(folder, "environment.txt")
    if os.path.exists(env):
        print("```\n" + open(env).read().split("plugin:")[0].strip() + "\n```\n")

    # Only the modes whose step ran (its log exists): a run given --steps without them has none.
    ran = [m for m in MODES if os.path.exists(os.path.join(folder, f"collectives-{m}.log"))
           or os.path.exists(os.path.join(folder, f"collectives-{m}.json"))]
    if ran:
        print("## Collectives through PyTorch (tools/gpu-validate/collectives.py)\n")
        print("| mode | network | net channels with GDRDMA | cases | wrong | all_reduce fp32 8 B us | 256 KiB us | 64 MiB busbw GB/s | verdict |")
        print("|---|---|---|---|---|---|---|---|---|")
    for mode in ran:
        path = os.path.join(folder, f"collectives-{mode}.json")
        if not os.path.exists(path):
            print(f"| {MODE_TEXT[mode]} | (no result: see collectives-{mode}.log) |||||||FAIL|")
            continue
        d = json.load(open(path))
        ar = {r["bytes"]: r for r in d["rows"] if r["op"] == "all_reduce" and r["dtype"] == "float32"}
        small = ar[min(ar)]["time_us"] if ar else None
        mid = min(ar.values(), key=lambda r: abs(r["bytes"] - 262144))["time_us"] if ar else None
        big = min(ar.values(), key=lambda r: abs(r["bytes"] - (64 << 20)))["busbw_gbs"] if ar else None
        wrong = sum(r["wrong"] for r in d["rows"])
        print(f"| {MODE_TEXT[mode]} | {d['network']} | {d['gdr_channels']}/{d['channels']} | {len(d['rows'])} | "
              f"{wrong} | {fmt(small, '.1f')} | {fmt(mid, '.1f')} | {fmt(big, '.2f')} | "
              f"{'PASS' if d['passed'] else 'FAIL'} |")

    perf = {m: os.path.join(folder, f"all_reduce_perf-{m}.log") for m in MODES}
    if any(os.path.exists(p) for p in perf.values()):
        print("\n## nccl-tests all_reduce_perf -c 1 (float sum, out-of-place)\n")
        print("| mode | 8 B us | 256 KiB us | 64 MiB busbw GB/s | 256 MiB busbw GB/s | #wrong (all sizes) | footer |")
        print("|---|---|---|---|---|---|---|")
        for mode, path in perf.items():
            if not os.path.exists(path):
                continue
            rows, footer = perf_rows(path)
            get = lambda size, i: rows[size][i] if size in rows else None  # noqa: E731
            wrong = sum(r[2] for r in rows.values() if isinstance(r[2], int))
            print(f"| {MODE_TEXT[mode]} | {fmt(get(8, 0), '.1f')} | {fmt(get(262144, 0), '.1f')} | "
                  f"{fmt(get(64 << 20, 1), '.2f')} | {fmt(get(256 << 20, 1), '.2f')} | "
                  f"{wrong if rows else 'no rows'} | {'; '.join(footer)} |")

    tps = sorted(glob.glob(os.path.join(folder, "tp-allreduce-*.log")))
    if tps:
        print("\n## Tensor-parallel all-reduce (examples/tp_allreduce.py), slowest rank\n")
        print("| mode | p50 us | p90 us | p99 us | per token, p50 |")
        print("|---|---|---|---|---|")
        for path in tps:
            mode = re.sub(r"^tp-allreduce-|\.log$", "", os.path.basename(path))
            text = open(path, errors="replace").read()
            m = re.search(r"slowest rank\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", text)
            t = re.search(r"per token: .*?communication p50 ([\d.]+) ms", text)
            if m:
                print(f"| {MODE_TEXT.get(mode, mode)} | {m.group(1)} | {m.group(2)} | {m.group(3)} | "
                      f"{t.group(1) + ' ms' if t else '-'} |")
            else:
                print(f"| {MODE_TEXT.get(mode, mode)} | (failed: see {os.path.basename(path)}) ||||")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: summarize.py <gpu-validate output folder>", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
