#!/usr/bin/env bash
# One connection over a two-member virtual NIC beside one member (issue 48): roce-bench's bw and
# pingpong, each with and without --vdevice, in alternating rounds (round r runs one member first
# when r is even, the virtual NIC first when it is odd, so neither always runs on the warmer
# machine), then a table of the medians over the rounds, the paired ratio (virtual NIC / one
# member, the median of the per-round ratios) with a 90% bootstrap interval, and the target:
# bw at 4 MiB and above >= 1.70x the bytes/s, pingpong at 8 B <= 1.05x the latency.
#
#   scripts/bench-vdevice.sh [--build DIR (build/release)] [--rounds N (5)] [--api v11]
#       [--members 0,1] [--bw-iters 200] [--bw-warmup 20] [--pp-iters 20000] [--pp-warmup 1000]
#       [--min-bytes 4M] [--max-bytes 64M] [--json FILE] [-- extra roce-bench args]
#
# The ranks run on vroce as roce-bench starts them: VROCE_DEVICES (default four devices vbd0..vbd3
# on 127.0.6.31..34; one per rank, two per rank with --vdevice), and one fake sysfs tree for every
# run (VROCE_SYSFS_ROOT, NCCL_ROCE_SYSFS_ROOT), so both configurations keep port counters alike and
# each virtual NIC run shows what each member carried. Exit status 1 when a run fails, reports a
# wrong element, or leaves a member of the virtual NIC without traffic.
set -euo pipefail

build=build/release
rounds=5
api=v11
members=0,1
bw_iters=200
bw_warmup=20
pp_iters=20000
pp_warmup=1000
min_bytes=4M
max_bytes=64M
json=""
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --api) api=$2; shift 2 ;;
    --members) members=$2; shift 2 ;;
    --bw-iters) bw_iters=$2; shift 2 ;;
    --bw-warmup) bw_warmup=$2; shift 2 ;;
    --pp-iters) pp_iters=$2; shift 2 ;;
    --pp-warmup) pp_warmup=$2; shift 2 ;;
    --min-bytes) min_bytes=$2; shift 2 ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "bench-vdevice.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
bench=$build/bin/roce-bench
[[ -x $bench ]] || {
  echo "bench-vdevice.sh: $bench is not built (cmake --preset release -G Ninja && cmake --build" \
    "build/release --target nccl_net_roce vroce roce-bench), or name the build with --build" >&2
  exit 2
}
work=$(mktemp -d /tmp/bench-vdevice.XXXXXX)
trap 'rm -rf "$work"' EXIT
export VROCE_DEVICES=${VROCE_DEVICES:-vbd0=127.0.6.31,vbd1=127.0.6.32,vbd2=127.0.6.33,vbd3=127.0.6.34}
mkdir -p "$work/sysfs"
export VROCE_SYSFS_ROOT=$work/sysfs NCCL_ROCE_SYSFS_ROOT=$work/sysfs

# run <mode> <config> <round>: one roce-bench run, its JSON kept as <mode>-<config>-<round>.json
run() {
  local mode=$1 config=$2 round=$3 args
  if [[ $mode == bw ]]; then
    args=(-m bw -b "$min_bytes" -e "$max_bytes" -f 2 -n "$bw_iters" -w "$bw_warmup" --window 8)
  else
    args=(-m pingpong -b 8 -e 8 -n "$pp_iters" -w "$pp_warmup")
  fi
  [[ $config == vnic ]] && args+=(--vdevice "$members")
  local out=$work/$mode-$config-$round
  echo "round $round: roce-bench --api $api ${args[*]} ${extra[*]}" >&2
  if ! "$bench" --api "$api" "${args[@]}" "${extra[@]}" --json="$out.json" >"$out.log" 2>&1; then
    echo "bench-vdevice.sh: the run failed:" >&2
    tail -n 30 "$out.log" >&2
    exit 1
  fi
}

for ((r = 0; r < rounds; r++)); do
  for mode in bw pingpong; do
    if ((r % 2 == 0)); then order=(one vnic); else order=(vnic one); fi
    for config in "${order[@]}"; do
      run "$mode" "$config" "$r"
    done
  done
done

SCRIPTS_LIB=$(cd "$(dirname "$0")/lib" && pwd) python3 - "$work" "$rounds" "$json" "$members" <<'PY'
import json
import os
import statistics
import sys

sys.path.insert(0, os.environ["SCRIPTS_LIB"])
from paired_rounds import paired_interval  # noqa: E402

work, rounds, json_out, members = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
failed = []


def load(mode, config, r):
    doc = json.load(open(os.path.join(work, f"{mode}-{config}-{r}.json")))
    if doc.get("status") != "pass" or doc.get("wrong_total", 1) != 0:
        failed.append(f"{mode} {config} round {r}: status {doc.get('status')}, "
                      f"{doc.get('wrong_total')} wrong")
    if config == "vnic":
        for m in doc.get("vdevice", {}).get("member_traffic", []):
            carried = (m["sent_bytes"] or 0) + (m["received_bytes"] or 0)
            if carried == 0:
                failed.append(f"{mode} round {r}: rank {m['rank']}'s member {m['device']} "
                              "carried nothing")
    # bw: algbw (GB/s, higher is better); pingpong: one-way latency (us, lower is better).
    key = "algbw_gbs" if mode == "bw" else "time_us"
    return {row["size"]: row[key] for row in doc["series"][-1]["rows"]}


def size_text(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


rows = []
print(f"\nvirtual NIC (--vdevice {members}) beside one member, {rounds} round(s); "
      "medians over the rounds, ratio = virtual NIC / one member (paired, 90% interval)")
print(f"{'mode':<9} {'size':>7} {'one member':>13} {'virtual NIC':>13} {'ratio':>6} "
      f"{'interval':>14}  {'target':<8} verdict")
for mode, unit, target in (("bw", "GB/s", 1.70), ("pingpong", "us", 1.05)):
    one = [load(mode, "one", r) for r in range(rounds)]
    vnic = [load(mode, "vnic", r) for r in range(rounds)]
    for size in sorted(one[0]):
        a = [run[size] for run in one if size in run]
        b = [run[size] for run in vnic if size in run]
        ratio, lo, hi = paired_interval(b, a)
        if ratio is None:
            continue
        if mode == "bw":
            goal = f">= {target:.2f}" if size >= 4 << 20 else "-"
            met = ratio >= target if size >= 4 << 20 else None
        else:
            goal = f"<= {target:.2f}" if size == 8 else "-"
            met = ratio <= target if size == 8 else None
        verdict = "-" if met is None else "met" if met else "MISSED"
        print(f"{mode:<9} {size_text(size):>7} {statistics.median(a):>8.3f} {unit:<4} "
              f"{statistics.median(b):>8.3f} {unit:<4} {ratio:>6.2f} [{lo:5.2f}, {hi:5.2f}]  "
              f"{goal:<8} {verdict}")
        rows.append({"mode": mode, "size": size, "unit": unit, "one_member": a,
                     "virtual_nic": b, "ratio": ratio, "interval": [lo, hi], "target": goal,
                     "verdict": verdict})
for f in failed:
    print("FAILED: " + f, file=sys.stderr)
if json_out:
    with open(json_out, "w") as f:
        json.dump({"members": members, "rounds": rounds, "rows": rows, "failed": failed}, f,
                  indent=1)
sys.exit(1 if failed else 0)
PY
