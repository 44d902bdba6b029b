#!/usr/bin/env bash
# --vdevice over vroce: one connection on a two-member virtual NIC. Each rank gets two vroce
# devices as the functions .0 and .1 of one PCI device (a dual-port NIC), fuses them with
# makeVDevice, and roce-bench's bw runs over the virtual NIC. The run must verify every byte,
# say it used the 2-member virtual NIC, and both members of each rank must have carried the data
# by their port counters (vroce's fake sysfs): the sender's members sent, the receiver's received,
# each member at least a quarter of the bytes the run moved, so no member was left idle.
#
# usage: with_test_addresses --vroce-devices A,B,C,D -- vdevice_test.sh ROCE_BENCH [args...]
# (NCCL_IBVERBS_LIB: vroce's libibverbs; the args end up after the test's own).
set -euo pipefail
bench=$1
shift
dir=$(mktemp -d /tmp/rb-vdevice.XXXXXX)
trap 'rm -rf "$dir"' EXIT
status=0
timeout --kill-after=5 150 "$bench" -m bw --api v11 --vdevice 0,1 -b 1M -e 4M -f 2 -n 32 -w 4 \
  --json="$dir/run.json" "$@" >"$dir/out" 2>"$dir/err" || status=$?
failed=0
fail() {
  echo "FAIL: $*" >&2
  failed=1
}
[[ $status == 0 ]] || fail "exit status $status"
for want in "Out of bounds values : 0 OK" \
  "# virtual NIC: makeVDevice(0,1) on every rank: a virtual NIC of 2 members" \
  ", virtual NIC of 2 members: dev 0 " \
  "#   every member carried data"; do
  grep -qF -- "$want" "$dir/out" || fail "stdout lacks: $want"
done
if [[ -s $dir/run.json ]]; then
  python3 - "$dir/run.json" <<'PY' || failed=1
import json
import sys

run = json.load(open(sys.argv[1]))
problems = []
if run["status"] != "pass" or run["wrong_total"] != 0:
    problems.append(f"status {run['status']}, {run['wrong_total']} wrong")
vdev = run.get("vdevice", {})
if vdev.get("members") != [0, 1]:
    problems.append(f"vdevice members {vdev.get('members')}")
# What the timed part of the run moved, rank 0 to rank 1 (the warm-up moved more).
moved = sum(row["size"] * row["iters"] for row in run["series"][0]["rows"])
traffic = vdev.get("member_traffic", [])
for rank, key in ((0, "sent_bytes"), (1, "received_bytes")):
    members = [m for m in traffic if m["rank"] == rank]
    if len(members) != 2:
        problems.append(f"rank {rank} reports {len(members)} members")
    for m in members:
        got = m[key]
        print(f"rank {rank} {m['device']}: {key} {got} of {moved} moved")
        if got is None or got < moved // 4:
            problems.append(f"rank {rank}'s member {m['device']} {key} {got}: under a quarter "
                            f"of the {moved} bytes moved")
if {m["device"] for m in traffic if m["rank"] == 0} & {m["device"] for m in traffic if m["rank"] == 1}:
    problems.append("the ranks share a device")
for p in problems:
    print("FAIL: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
else
  fail "no JSON written"
fi
if [[ $failed != 0 ]]; then
  echo "--- stdout:" >&2
  cat "$dir/out" >&2
  echo "--- stderr:" >&2
  cat "$dir/err" >&2
  exit 1
fi
grep -F "virtual NIC" "$dir/out"
echo "ok: bw over a two-member virtual NIC, both members of each rank carried data"
