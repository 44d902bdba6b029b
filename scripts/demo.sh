#!/usr/bin/env bash
# The first command to run: on a fresh Debian 12 machine it installs what is missing, builds the
# plugin, vroce and roce-bench (release preset, only those targets), then runs a 2-rank and a
# 4-rank ring all-reduce from 8 B to 64 MiB through the plugin, each rank on its own vroce device
# (a userspace RoCEv2 NIC: no RDMA hardware needed), and ends with the per-token question: one
# decode step of Llama 3 70B at TP=4 (160 all-reduces of 256 KiB, roce-bench --mode tp). It
# prints the nccl-tests-style tables, the per-token line and a verdict: PASS with the figures
# that matter, or FAIL with why (non-zero exit).
#
# Source tree only: it builds the checkout it sits in, so the Debian packages do not carry it.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/demo.sh [--max-bytes N] [--no-install]

Installs what is missing, builds the plugin, vroce and roce-bench (preset release), runs a 2- and
a 4-rank ring all-reduce through the plugin over vroce and the Llama 3 70B TP=4 per-token step,
and ends with PASS and the figures that matter, or FAIL and why. Runs from a source checkout.

Options:
  --max-bytes N   largest all-reduce (default 64M)
  --no-install    do not run scripts/install-deps.sh
  -h, --help      this text

Environment:
  ROCE_JOBS       build parallelism (default: nproc)
  VROCE_DEVICES   vroce's device list (default vroce0..vroce7 on 127.0.0.11..18, one per rank)

Exit status: 0 PASS; 1 FAIL; 2 bad usage or not run from a source checkout.
EOF
}

bad_usage() {
  echo "demo: $*" >&2
  usage >&2
  exit 2
}

max_bytes=64M
install=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --max-bytes)
      [[ $# -ge 2 ]] || bad_usage "--max-bytes needs a size (e.g. 64M)"
      max_bytes=$2
      shift 2
      ;;
    --no-install) install=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) bad_usage "unknown argument '$1'" ;;
  esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ ! -f $repo/CMakePresets.json || ! -f $repo/scripts/install-deps.sh ]]; then
  echo "demo: $repo is not a source checkout of nccl-net-roce: demo.sh builds the tree it sits" \
    "in, so it runs only from a checkout (clone the project and run scripts/demo.sh there)" >&2
  exit 2
fi
cd "$repo"

jobs=${ROCE_JOBS:-$(nproc)}

fail() {
  echo "demo: FAIL: $*"
  exit 1
}

if [[ $install == 1 ]]; then
  echo "=== installing what is missing (scripts/install-deps.sh)"
  scripts/install-deps.sh || fail "installing the Debian packages failed (run as root)"
fi

echo "=== building the plugin, vroce and roce-bench (release)"
cmake --preset release -G Ninja >/dev/null || fail "cmake could not configure build/release"
cmake --build build/release --target nccl_net_roce vroce roce-bench -j "$jobs" ||
  fail "the build failed (see the compiler errors above)"

bench=build/release/bin/roce-bench
work=$(mktemp -d /tmp/roce-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT

start=$SECONDS
for nranks in 2 4; do
  echo
  echo "=== ring all-reduce over $nranks ranks through the plugin, 8 B to $max_bytes, over vroce"
  status=0
  "$bench" --mode allreduce --nranks "$nranks" -b 8 -e "$max_bytes" \
    --json="$work/allreduce-$nranks.json" 2>"$work/allreduce-$nranks.err" || status=$?
  cat "$work/allreduce-$nranks.err" >&2
  echo "$status" >"$work/allreduce-$nranks.status"
done
echo
echo "=== the per-token question: Llama 3 70B decode steps at TP=4 through the plugin, over vroce"
status=0
"$bench" --mode tp --model llama3-70b --tp 4 --batch 16 --steps 3 \
  --json="$work/tp.json" 2>"$work/tp.err" || status=$?
cat "$work/tp.err" >&2
echo "$status" >"$work/tp.status"
elapsed=$((SECONDS - start))

echo
python3 - "$work" "$elapsed" <<'PY'
import json, os, sys
work, elapsed = sys.argv[1], int(sys.argv[2])
problems, figures = [], []

def human(n):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"

for n in (2, 4):
    status = int(open(f"{work}/allreduce-{n}.status").read())
    path = f"{work}/allreduce-{n}.json"
    if not os.path.exists(path):
        errors = [l.strip() for l in open(f"{work}/allreduce-{n}.err") if "error" in l]
        problems.append(f"{n} ranks: roce-bench exited with status {status} before reporting"
                        + (f" ({errors[0]})" if errors else ""))
        continue
    run = json.load(open(path))
    rows = run["series"][0]["rows"] if run["series"] else []
    if status != 0 or run["status"] != "pass":
        problems.append(f"{n} ranks: status {status}, {run['wrong_total']} wrong element(s)"
                        + (f", {run['error']}" if run.get("error") else ""))
    if not rows:
        problems.append(f"{n} ranks: no results")
        continue
    small, large = rows[0], rows[-1]
    figures.append(f"{n} ranks: {human(small['size'])} in {small['time_us']:.1f} us, "
                   f"{human(large['size'])} at busbw {large['busbw_gbs']:.3f} GB/s "
                   f"({len(rows)} sizes)")
per_token = None
status = int(open(f"{work}/tp.status").read())
if not os.path.exists(f"{work}/tp.json"):
    problems.append(f"tp: roce-bench exited with status {status} before reporting")
else:
    tp = json.load(open(f"{work}/tp.json"))
    if status != 0 or tp["status"] != "pass":
        problems.append(f"tp: status {status}, {tp['wrong_total']} wrong element(s)")
    per_token = tp["per_token"]
if problems:
    print("demo: FAIL: " + "; ".join(problems))
    sys.exit(1)
print("demo: PASS: " + "; ".join(figures) +
      f"; every element verified against the exact sum; {elapsed} s of runs")
print(f"demo: {per_token} (vroce on this machine's CPUs, not a NIC; see README, "
      "'Will my fabric meet my token budget?')")
PY
