#!/usr/bin/env python3
"""side_by_side.py: one all-reduce sweep (tools/gpu-validate/nccl_allreduce_sweep) run inside NCCL
through each network transport on the same vroce devices, in rounds whose order rotates, with this
plugin run twice per round as an A/A control; then, per cell, the paired ratio of this plugin's
time to each other transport's, its interval and a verdict (scripts/lib/paired_rounds.py), and one
machine-readable record of the whole run (scripts/results-table turns records into the tables of
docs/benchmarks.md).

Contenders:
  ours     this plugin (NCCL_NET_PLUGIN=<build>/lib/libnccl-net-roce.so, NCCL_NET=RoCE)
  control  this plugin again, the same way: what the method reads between two identical runs
  ib       NCCL's built-in IB transport (NCCL_NET=IB, no plugin)
  netib    net_ib as a plugin: nccl-rdma-sharp-plugins' libnccl-net.so, built outside this tree
           from its public source (--netib; docs/benchmarks.md says how)
  fused    this plugin with two vroce devices per rank, the two functions of one PCI device (a
           dual-port NIC), which NCCL fuses into one virtual NIC at its default merge level: what
           fusion buys inside NCCL (named with --contenders; not a competitor, so its cells are
           never counted as slower)
The IB transports read /sys/class/infiniband themselves, so their runs see vroce's fake sysfs
mounted over /sys/class in a private mount namespace (unshare -m; root). On NCCL 2.28 they run
with NCCL_GIN_TYPE=2 (docs/vroce.md: 2.28's GIN auto-selection crashes on a host without mlx5).

Modes: gdr-dmabuf (NCCL_NET_GDR_LEVEL=SYS, dma-buf registration: every network channel must
show GDRDMA) and host (NCCL_NET_GDR_LEVEL=LOC: none may). Each run's NCCL log is checked for the
network and the GDR mode asked for; a run that used another, failed, or reported a wrong element
fails the whole script (exit 1) after the record is written.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "scripts" / "lib"))
sys.path.insert(0, str(REPO / "examples"))
from paired_rounds import paired_interval, round_order, verdict  # noqa: E402
from tp_allreduce import chosen_network, transport_lines  # noqa: E402

CONTENDERS = ("ours", "control", "ib", "netib", "fused")
COMPETITORS = ("ib", "netib")  # the transports a slower cell is judged against
MODES = ("gdr-dmabuf", "host")
VROCE_BASE = "127.0.0.21"  # rank r uses 127.0.0.(21 + r), as forked_ranks.h gives them
FUSED_MEMBERS = 2  # the fused contender's devices per rank: a dual-port NIC


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sweep", required=True, help="the nccl_allreduce_sweep binary")
    p.add_argument("--build", default=str(REPO / "build" / "release"),
                   help="tree with lib/libnccl-net-roce.so and vroce/lib/libibverbs.so.1")
    p.add_argument("--netib", help="nccl-rdma-sharp-plugins' libnccl-net.so (contender netib)")
    p.add_argument("--contenders", default=None,
                   help="comma-separated, from " + ",".join(CONTENDERS) +
                   " [all; netib only with --netib]")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--ranks", default="2 4 8")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--min-bytes", default="8")
    p.add_argument("--max-bytes", default="64M")
    p.add_argument("--factor", default="4")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--nccl-lib", help="folder of the libnccl.so.2 to run [PyTorch's]")
    p.add_argument("--out", required=True, help="folder for the runs' logs and JSON")
    p.add_argument("--record", help="write the run's record here [OUT/side-by-side.json]")
    p.add_argument("--timeout", type=int, default=600, help="seconds one sweep may take")
    p.add_argument("--dry-run", action="store_true", help="print each run's command, run nothing")
    p.add_argument("--without-mps", action="store_true",
                   help="run although no MPS daemon serves the GPU (the ranks then time-slice it)")
    a = p.parse_args(argv)
    names = a.contenders.split(",") if a.contenders else [c for c in CONTENDERS
                                                          if c != "fused" and (c != "netib" or a.netib)]
    bad = [c for c in names if c not in CONTENDERS]
    if bad or "ours" not in names:
        p.error(f"--contenders: {','.join(bad) or 'ours is missing'} (from {','.join(CONTENDERS)}; ours first)")
    if "netib" in names and not a.netib:
        p.error("contender netib needs --netib PATH (nccl-rdma-sharp-plugins' libnccl-net.so)")
    modes = a.modes.split(",")
    if any(m not in MODES for m in modes):
        p.error(f"--modes: each one of {','.join(MODES)}")
    try:
        ranks = [int(r) for r in a.ranks.split()]
    except ValueError:
        ranks = []
    if not ranks or any(r < 2 for r in ranks):
        p.error("--ranks: rank counts of 2 or more, e.g. \"2 4 8\"")
    if a.rounds < 1:
        p.error("--rounds: 1 or more")
    a.contenders, a.modes, a.ranks = names, modes, ranks
    return a


def mps_control_pipe():
    """The MPS control daemon's pipe when one runs for this environment, else None."""
    pipe = Path(os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"), "control")
    return pipe if pipe.exists() else None


def torch_nccl_lib():
    """The folder of PyTorch's libnccl.so.2 (the NCCL a PyTorch job runs), or None."""
    try:
        import nvidia.nccl
        return str(Path(list(nvidia.nccl.__path__)[0]) / "lib")
    except ImportError:
        return None


def contender_env(name, mode, a):
    """The environment one contender's run adds, and whether it runs in vroce's fake sysfs: every
    contender does, so NCCL sees the same topology in each. Without the tree the plugin finds no
    PCI path for a vroce device, NCCL hangs the NIC off the CPU and builds 4 channels at 4 ranks
    where it builds 8 for the IB runs (H100, 2026-12-06), a 1.4x gap at 2 MiB that measured the
    topology, not the transport."""
    plugin = str(Path(a.build, "lib", "libnccl-net-roce.so").resolve())
    vroce = str(Path(a.build, "vroce", "lib", "libibverbs.so.1").resolve())
    env = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_NVLS_ENABLE": "0",
           "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET", "ROCE_EXAMPLE_VROCE_BASE": VROCE_BASE}
    if mode == "gdr-dmabuf":
        # vroce's copy helper opens the ranks' buffers through CUDA IPC, which cuMem memory lacks
        # (gpu-validate.sh's header).
        env.update(NCCL_NET_GDR_LEVEL="SYS", NCCL_DMABUF_ENABLE="1", NCCL_CUMEM_ENABLE="0")
    else:
        env.update(NCCL_NET_GDR_LEVEL="LOC")
    if name in ("ours", "control", "fused"):
        env.update(NCCL_NET_PLUGIN=plugin, NCCL_NET="RoCE", NCCL_IBVERBS_LIB=vroce, NCCL_ROCE_DSCP="26")
        if name == "fused":
            # GRAPH: how NCCL placed the virtual NIC in its topology (run_one also asks rank 0 for
            # NCCL's topology dump), the first thing to read when fusion goes wrong.
            env.update(ROCE_EXAMPLE_VROCE_MEMBERS=str(FUSED_MEMBERS), NCCL_DEBUG_SUBSYS="INIT,NET,GRAPH")
        if mode == "gdr-dmabuf":
            env.update(NCCL_ROCE_REQUIRE_GDR="1")
        return env, True
    # NCCL's IB code and net_ib open libibverbs by name: vroce's folder goes first on the path.
    env.update(NCCL_NET="IB", NCCL_GIN_TYPE="2")
    env.update(NCCL_NET_PLUGIN=str(Path(a.netib).resolve()) if name == "netib" else "none")
    return env, True


def sweep_command(a, nranks, json_path, in_sysfs, devices_per_rank=1):
    cmd = [str(Path(a.sweep).resolve()), "--ranks", str(nranks), "--min-bytes", a.min_bytes, "--max-bytes",
           a.max_bytes, "--factor", a.factor, "--iters", str(a.iters), "--warmup", str(a.warmup), "--json",
           str(json_path)]
    # vroce's devices as /sys/class/infiniband, in a private mount namespace for this run only.
    return [str(HERE / "in_vroce_sysfs.sh"), str(nranks * devices_per_rank), *cmd] if in_sysfs else cmd


def log_problems(log_text, name, mode):
    """What in one run's NCCL log says it did not run as asked: another network, another GDR mode,
    or (for netib) NCCL's own IB transport instead of the plugin."""
    expect = "RoCE" if name in ("ours", "control", "fused") else "IB"
    problems = []
    network = chosen_network(log_text)
    if network != expect:
        problems.append(f"NCCL used network {network!r}, expected {expect!r}")
    channels = [line for line in transport_lines(log_text) if "via NET/" in line]
    gdr = [line for line in channels if "GDRDMA" in line]
    if not channels:
        problems.append("no 'via NET/' channel in NCCL's log")
    elif mode == "gdr-dmabuf" and len(gdr) != len(channels):
        problems.append(f"{len(channels) - len(gdr)} of {len(channels)} network channels without GDRDMA")
    elif mode == "host" and gdr:
        problems.append(f"{len(gdr)} network channels use GDRDMA where host staging was asked for")
    loaded_plugin = "Loaded net plugin" in log_text
    if name == "netib" and not loaded_plugin:
        problems.append("NCCL did not load the net_ib plugin (no 'Loaded net plugin' line)")
    if name == "ib" and loaded_plugin:
        problems.append("NCCL loaded a net plugin where its built-in IB transport was asked for")
    if name == "fused" and "makeVDevice: virtual NIC" not in log_text:
        problems.append("NCCL did not fuse the rank's devices (no 'makeVDevice: virtual NIC' line)")
    return problems


def run_one(a, name, mode, nranks, tag):
    """One sweep; returns ({cell name: cell}, problems)."""
    extra, needs_sysfs = contender_env(name, mode, a)
    logs = Path(a.out, "nccl-logs")
    json_path = Path(a.out, f"{tag}.json")
    vroce_dir = str(Path(a.build, "vroce", "lib").resolve())
    env = dict(os.environ, **extra, NCCL_DEBUG_FILE=str(logs / f"{tag}.%h.%p.log"), VROCE_LIB_DIR=vroce_dir)
    if name == "fused":
        env["NCCL_TOPO_DUMP_FILE"] = str(logs / f"{tag}.topology.xml")
    nccl_lib = a.nccl_lib or torch_nccl_lib()
    env["LD_LIBRARY_PATH"] = ":".join(p for p in (vroce_dir, nccl_lib, os.environ.get("LD_LIBRARY_PATH")) if p)
    devices_per_rank = int(extra.get("ROCE_EXAMPLE_VROCE_MEMBERS", "1"))  # as contender_env gave it
    cmd = sweep_command(a, nranks, json_path, needs_sysfs, devices_per_rank)
    if a.dry_run:
        print(" ".join(f"{k}={v}" for k, v in sorted(extra.items())), " ".join(cmd))
        return {}, []
    logs.mkdir(parents=True, exist_ok=True)
    with open(Path(a.out, f"{tag}.log"), "w") as out:
        try:
            rc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=a.timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    problems = [] if rc == 0 else [f"exit {rc} (log {tag}.log)"]
    log_text = "".join(p.read_text(errors="replace") for p in sorted(logs.glob(f"{tag}.*.log")))
    problems += log_problems(log_text, name, mode)
    cells = {}
    if json_path.exists() and json_path.stat().st_size > 0:
        doc = json.loads(json_path.read_text())
        cells = {c["name"]: c for c in doc["cells"]}
        a.nccl_version = doc.get("nccl_version")
        wrong = sum(c["wrong"] for c in doc["cells"])
        if wrong:
            problems.append(f"{wrong} wrong elements")
    elif rc == 0:
        problems.append("no JSON from the sweep")
    return cells, [f"{tag}: {p}" for p in problems]


def summarize(rounds, names):
    """rounds: [{contender: {cell: cell}}] for one (mode, ranks) -> one row per cell."""
    rows = []
    first = rounds[0]["ours"] if rounds else {}
    for cell in first:
        kept = [r for r in rounds if all(cell in r.get(n, {}) for n in names)]
        if not kept:
            continue
        times = {n: [r[n][cell]["time_us"] for r in kept] for n in names}
        row = {"cell": cell, "bytes": first[cell]["bytes"], "dtype": first[cell]["dtype"], "rounds": len(kept),
               "time_us": {n: statistics.median(t) for n, t in times.items()},
               "rounds_us": times,
               "busbw_gbs": {n: statistics.median(r[n][cell]["busbw_gbs"] for r in kept) for n in names},
               "wrong": sum(r[n][cell]["wrong"] for r in kept for n in names)}
        control = None
        if "control" in names:
            c, lo, hi = paired_interval(times["ours"], times["control"])
            control = (lo, hi)
            row["control"] = {"paired_ratio": c, "interval": [lo, hi]}
        for other in names:
            if other in ("ours", "control"):
                continue
            paired, lo, hi = paired_interval(times["ours"], times[other])
            row[f"vs_{other}"] = {"paired_ratio": paired, "interval": [lo, hi],
                                  "verdict": verdict(lo, hi, control)}
        rows.append(row)
    return rows


def machine_facts(a):
    facts = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count()}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
        if q:
            facts["gpu"], facts["driver"] = (s.strip() for s in q[0].split(",", 1))
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        import torch
        facts["pytorch"] = torch.__version__
    except ImportError:
        pass
    v = getattr(a, "nccl_version", None)
    if v:
        facts["nccl"] = f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    try:
        facts["commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True, timeout=30).stdout.strip() or None
    except OSError:
        pass
    return facts


def print_table(group, names):
    others = [n for n in names if n not in ("ours", "control")]
    print(f"\n## {group['mode']}, {group['ranks']} ranks: time per all-reduce (us, median of "
          f"{group['rows'][0]['rounds'] if group['rows'] else 0} rounds); ours/X paired [90% interval]")
    head = f"{'cell':<16}" + "".join(f"{n + ' us':>12}" for n in names)
    head += "".join(f"  {'ours/' + o:<28}" for o in others) + ("  control" if "control" in names else "")
    print(head)
    for r in group["rows"]:
        line = f"{r['cell']:<16}" + "".join(f"{r['time_us'][n]:>12.1f}" for n in names)
        for o in others:
            v = r[f"vs_{o}"]
            lo, hi = v["interval"]
            line += f"  {v['paired_ratio']:.3f} [{lo:.2f}, {hi:.2f}] {v['verdict']:<6}"
        if "control" in names:
            c = r["control"]
            line += f"  {c['paired_ratio']:.3f} [{c['interval'][0]:.2f}, {c['interval'][1]:.2f}]"
        print(line)


def portable(arg):
    """An argument as the record shows it: paths inside the checkout relative to it, and the run's
    output folder as $OUT. The records ship in the packages' docs, which must hold no build path."""
    out = os.environ.get("OUT", "").rstrip("/")
    if out and (arg == out or arg.startswith(out + "/")):
        return "$OUT" + arg[len(out):]
    if arg.startswith(str(REPO) + "/"):
        return os.path.relpath(arg, REPO)
    return arg


def main(argv=None):
    a = parse_args(argv)
    # The ranks share GPU 0. Without MPS the GPU time-slices between their contexts and a ring's
    # kernels never run at once: every transport then read 45.86 ms per 8 B all-reduce at 4 ranks
    # (H200, 2026-12-06), a figure of the scheduler that no ratio can rescue.
    if not a.dry_run and not a.without_mps and mps_control_pipe() is None:
        print("side_by_side.py: no MPS daemon serves the GPU (no control pipe in "
              "$CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps): the ranks would time-slice GPU 0 and "
              "measure the scheduler; start it with 'nvidia-cuda-mps-control -d' (as root), or pass "
              "--without-mps", file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    problems, groups = [], []
    for mode in a.modes:
        for nranks in a.ranks:
            rounds = []
            for r in range(a.rounds):
                got = {}
                for name in round_order(list(a.contenders), r):
                    tag = f"{mode}-x{nranks}-r{r}-{name}"
                    print(f"=== {tag}", flush=True)
                    got[name], p = run_one(a, name, mode, nranks, tag)
                    problems += p
                rounds.append(got)
            if a.dry_run:
                continue
            group = {"mode": mode, "ranks": nranks, "rows": summarize(rounds, a.contenders)}
            groups.append(group)
            print_table(group, a.contenders)
    if a.dry_run:
        return 0
    record = {"kind": "side-by-side", "date": started.strftime("%Y-%m-%dT%H:%M:%SZ"), **machine_facts(a),
              "command": "tools/gpu-validate/side_by_side.py " + " ".join(
                  portable(arg) for arg in (sys.argv[1:] if argv is None else argv)),
              "method": {"rounds": a.rounds, "order": "rotating", "control": "control" in a.contenders,
                         "iters": a.iters, "warmup": a.warmup, "contenders": a.contenders,
                         "time": "slowest rank's mean per all-reduce, median over rounds"},
              "groups": groups, "problems": problems}
    record_path = Path(a.record) if a.record else out / "side-by-side.json"
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    slower = [f"{g['mode']} x{g['ranks']} {r['cell']} vs {o}" for g in groups for r in g["rows"]
              for o in COMPETITORS if f"vs_{o}" in r and r[f"vs_{o}"]["verdict"] == "slower"]
    print(f"\n# record: {record_path}")
    print(f"# slower beyond the control: {len(slower)} cells" + "".join(f"; {s}" for s in slower))
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        print(f"side_by_side.py: {e}", file=sys.stderr)
        sys.exit(1)
