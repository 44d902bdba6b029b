#!/usr/bin/env python3
"""Hunts for hangs of perftest and ibv_rc_pingpong in completion-event mode (-e) over vroce.

Runs `--pairs` server/client pairs, cycling through ib_send_lat -e, ib_read_lat -e,
ib_send_bw -e and ibv_rc_pingpong -e, each bounded by --timeout seconds, optionally with CPU
burners (--burners N python busy loops). Prints one line per pair and a count of passes, hangs
(no result within the bound) and other failures; the logs of failed pairs are kept under --keep.
Uses test/vroce/perftest/perftest_suite.py's Runner, so a pair is checked as that suite checks
it (both exit 0, no error completion, no QP left behind).

  scripts/vroce-event-hunt.py --lib build/ci/vroce/lib [--pairs 200] [--burners 0]
      [--base 127.77.0.1] [--timeout 120] [--keep /tmp/vroce-event-hunt]
      [--wrap 'strace -f -qq -o /dev/null'] [--cases ib_send_lat-e,...]
"""
import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "vroce" / "perftest"))
import perftest_suite  # noqa: E402

CASES = [
    ("ib_send_lat-e", "ib_send_lat", ["-s", "8", "-n", "1000", "-e"], "-x"),
    ("ib_read_lat-e", "ib_read_lat", ["-s", "8", "-n", "1000", "-e"], "-x"),
    ("ib_send_bw-e", "ib_send_bw", ["-s", "4096", "-n", "1000", "-e"], "-x"),
    ("ibv_rc_pingpong-e", "ibv_rc_pingpong", ["-n", "1000", "-e", "-s", "8"], "-g"),
]

# vroce counters summed over both sides of a passed pair, shown when non-zero.
NOTED = ("cq_overruns", "ack_timeouts", "retransmitted_packets", "scheduling_stalls")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", required=True)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--burners", type=int, default=0)
    parser.add_argument("--base", default="127.77.0.1")
    parser.add_argument("--timeout", type=int, default=120)
    parser.add_argument("--keep", default="/tmp/vroce-event-hunt")
    parser.add_argument("--wrap", default="",
                        help="a command each program runs under, e.g. 'strace -f -qq -o /dev/null'")
    parser.add_argument("--cases", default=",".join(c[0] for c in CASES),
                        help="comma-separated case names to cycle through")
    args = parser.parse_args()
    perftest_suite.CASE_TIMEOUT_S = args.timeout
    cases = [c for c in CASES if c[0] in args.cases.split(",")]
    keep = Path(args.keep)
    keep.mkdir(parents=True, exist_ok=True)
    burners = perftest_suite.Burners(args.burners) if args.burners > 0 else None
    counts = {"pass": 0, "hang": 0, "fail": 0}
    totals = dict.fromkeys(NOTED, 0)
    try:
        with tempfile.TemporaryDirectory(prefix="vroce-event-hunt.") as work:
            runner = perftest_suite.Runner(str(Path(args.lib).resolve()), args.base, Path(work))
            wrappers = {}
            if args.wrap:
                for _, prog, _, _ in cases:
                    wrapper = Path(work) / f"wrapped-{prog}"
                    wrapper.write_text(f"#!/bin/sh\nexec {args.wrap} {shutil.which(prog)} \"$@\"\n")
                    wrapper.chmod(0o755)
                    wrappers[prog] = str(wrapper)
            for i in range(args.pairs):
                name, prog, prog_args, gid_flag = cases[i % len(cases)]
                try:
                    _, stats = runner.pair(f"{name}.{i}", wrappers.get(prog, prog), prog_args,
                                           gid_flag=gid_flag)
                    counts["pass"] += 1
                    noted = {key: sum(stats[side][key] for side in stats) for key in NOTED}
                    for key, value in noted.items():
                        totals[key] += value
                    shown = ", ".join(f"{k} {v}" for k, v in noted.items() if v)
                    print(f"{i}: ok {name}" + (f" ({shown})" if shown else ""), flush=True)
                except perftest_suite.Failure as failure:
                    kind = "hang" if "no result within" in str(failure) else "fail"
                    counts[kind] += 1
                    for log in Path(work).glob(f"{name}.{i}.*"):
                        shutil.copy(log, keep / log.name)
                    print(f"{i}: {kind.upper()} {name}: {str(failure)[:2000]}", flush=True)
    finally:
        if burners is not None:
            burners.stop()
    print(f"pairs {args.pairs}, burners {args.burners}: passed {counts['pass']}, "
          f"hung {counts['hang']}, failed {counts['fail']}; over the passed pairs: " +
          ", ".join(f"{k} {v}" for k, v in totals.items()))
    return 0 if counts["pass"] == args.pairs else 1


if __name__ == "__main__":
    sys.exit(main())
