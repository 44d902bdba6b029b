#!/usr/bin/env bash
# Counts the CPU instructions the plugin executes per message, with callgrind, collecting only
# the plugin's own code: the self cost of every function in libnccl-net-roce.so, or in the
# --plugin file (libc, libibverbs and vroce excluded), inside roce-bench's timed region only.
# roce-bench zeroes callgrind's counters when its timed iterations begin and dumps them when they
# end (client requests), so connection setup, registration, warm-up and verification are not in
# the figure.
#
# Two ranks run in roce-bench's cluster mode, each under callgrind on its own vroce device.
# roce-bench sleeps between polls that find nothing (--poll-sleep-us), so idle polling does not
# swamp the figure; the plugin calls per message (and how many test() calls found nothing) are
# printed beside it, counted over the same region.
#   pingpong: each rank sends and receives one message per round trip -> per side = Ir / 2N
#   bw:       rank 0 only sends, rank 1 only receives -> the send side and the receive side
#
# usage: scripts/bench-callgrind.sh [--build DIR] [--api vN] [--size BYTES] [--messages N]
#                                   [--modes pingpong,bw] [--sleep-us N] [--keep DIR]
#                                   [--plugin PATH] [--vroce-sysfs]
#   --sleep-us N   pause between polls that find nothing (default 200)
#   --keep DIR     keep the callgrind files (callgrind_annotate DIR/*.out.1 shows the hot spots)
#   --plugin PATH  count another ncclNet plugin's own code instead (its .so file's instructions),
#                  such as net_ib built as nccl-rdma-sharp-plugins' libnccl-net.so
#   --vroce-sysfs  give each rank vroce's sysfs as /sys/class (roce-bench --vroce-sysfs; root):
#                  net_ib reads /sys/class/infiniband itself
# Environment: ROCE_CG_ADDRESSES="127.0.5.240,127.0.5.241" (the two vroce device addresses);
# ROCE_BENCH, ROCE_PLUGIN, ROCE_VROCE_LIB override the files taken from the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,26p' "$0" >&2
  exit 2
}

build=""
api=v8
size=8
messages=1000
modes=pingpong,bw
sleep_us=200
keep=""
plugin_option=""
sysfs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --api) api=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --messages) messages=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --sleep-us) sleep_us=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --plugin) plugin_option=$2; shift 2 ;;
    --vroce-sysfs) sysfs=(--vroce-sysfs); shift ;;
    -h | --help) usage ;;
    *) echo "bench-callgrind: unknown argument '$1'" >&2; usage ;;
  esac
done

if [[ -z $build ]]; then
  for candidate in build/release build/ci; do
    if [[ -x $candidate/bin/roce-bench ]]; then
      build=$candidate
      break
    fi
  done
fi
bench=${ROCE_BENCH:-${build:-build/release}/bin/roce-bench}
plugin=${plugin_option:-${ROCE_PLUGIN:-${build:-build/release}/lib/libnccl-net-roce.so}}
vroce=${ROCE_VROCE_LIB:-${build:-build/release}/vroce/lib/libibverbs.so.1}
for f in "$bench" "$plugin" "$vroce"; do
  if [[ ! -e $f ]]; then
    echo "bench-callgrind: $f is missing; build it first:" >&2
    echo "  cmake --preset release -G Ninja && cmake --build build/release --target roce-bench nccl_net_roce vroce" >&2
    exit 1
  fi
done
command -v valgrind >/dev/null || { echo "bench-callgrind: valgrind is not installed (scripts/install-deps.sh)" >&2; exit 1; }

# The object whose instructions are counted: the plugin's file as the ranks load it.
object=$(basename "$(realpath "$plugin")")

IFS=, read -r addr0 addr1 <<<"${ROCE_CG_ADDRESSES:-127.0.5.240,127.0.5.241}"
work=$(mktemp -d /tmp/rb-callgrind.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]+"${pids[@]}"}"; do
    kill "$pid" 2>/dev/null || true
  done
  if [[ -n $keep ]]; then
    mkdir -p "$keep" && cp -r "$work"/. "$keep"/
  fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# run MODE: both ranks under callgrind; leaves $work/MODE.rank{0,1}.out.1 (the timed region)
# and $work/MODE.json
run() {
  local mode=$1 port
  port=$(free_port)
  local common=(-m "$mode" -b "$size" -e "$size" -n "$messages" -w 10 --api "$api"
    --poll-sleep-us "$sleep_us" --timeout 600 --nranks 2 --rendezvous "$addr0:$port"
    "${sysfs[@]+"${sysfs[@]}"}")
  pids=()
  for rank in 0 1; do
    local addr=$addr0
    [[ $rank == 1 ]] && addr=$addr1
    # Ours loads NCCL_IBVERBS_LIB; a plugin linked to libibverbs.so.1 (net_ib) finds vroce's
    # through LD_LIBRARY_PATH.
    VROCE_DEVICES="cg$rank=$addr" NCCL_IB_HCA="=cg$rank" NCCL_IBVERBS_LIB="$(realpath "$vroce")" \
      LD_LIBRARY_PATH="$(dirname "$(realpath "$vroce")")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      valgrind --tool=callgrind --callgrind-out-file="$work/$mode.rank$rank.out" \
      "$bench" "${common[@]}" --rank "$rank" --plugin "$(realpath "$plugin")" \
      --json="$work/$mode.json" >"$work/$mode.rank$rank.log" 2>&1 &
    pids+=($!)
  done
  local status=0
  for pid in "${pids[@]}"; do
    wait "$pid" || status=1
  done
  pids=()
  if [[ $status != 0 ]]; then
    echo "bench-callgrind: the $mode run failed:" >&2
    tail -n 20 "$work/$mode.rank0.log" "$work/$mode.rank1.log" >&2
    exit 1
  fi
  for rank in 0 1; do
    if [[ ! -e $work/$mode.rank$rank.out.1 ]]; then
      echo "bench-callgrind: no timed-region dump from rank $rank: $bench was built without" \
        "valgrind's callgrind.h (install valgrind, rebuild)" >&2
      exit 1
    fi
  done
}

echo "# bench-callgrind: plugin instructions per message ($size B, api $api, $messages timed" \
  "messages, $sleep_us us between empty polls)"
echo "# plugin $(realpath "$plugin"), vroce $(realpath "$vroce"), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
IFS=, read -r -a mode_list <<<"$modes"
for mode in "${mode_list[@]}"; do
  case $mode in pingpong | bw) ;; *) echo "bench-callgrind: --modes takes pingpong and bw" >&2; exit 2 ;; esac
  echo "# running $mode under callgrind..." >&2
  run "$mode"
done

python3 - "$work" "$messages" "$object" "${mode_list[@]}" <<'PY'
import json, subprocess, sys
work, n, obj, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
tool = "scripts/callgrind-object-ir.py"

def plugin_ir(mode, rank):
    out = subprocess.run([sys.executable, tool, "--json", "--top", "5", obj,
                          f"{work}/{mode}.rank{rank}.out.1"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)[0]

print(f"# {'mode':<9} {'rank':>4} {'role':<13} {'Ir/message':>10} {'isend':>6} {'retry':>6}"
      f" {'irecv':>6} {'test':>6} {'empty':>6}   (plugin calls per message)")
sides, hot = [], []
for mode in modes:
    run = json.load(open(f"{work}/{mode}.json"))
    for rank in (0, 1):
        result = plugin_ir(mode, rank)
        calls = run["plugin_timed_calls"][rank]
        # pingpong: every rank sends and receives n messages; bw: one role per rank.
        handled = 2 * n if mode == "pingpong" else n
        role = ("send+receive" if mode == "pingpong" else
                "send side" if rank == 0 else "receive side")
        per = result["object_ir"] / handled
        sides.append(per)
        hot.append((mode, rank, result["top"]))
        print(f"  {mode:<9} {rank:>4} {role:<13} {per:>10.0f}"
              f" {calls['isend'] / handled:>6.2f} {calls['isend_retry'] / handled:>6.2f}"
              f" {calls['irecv'] / handled:>6.2f} {calls['test'] / handled:>6.2f}"
              f" {calls['test_pending'] / handled:>6.2f}")
print(f"# plugin instructions per message per side: max {max(sides):.0f}, "
      f"mean {sum(sides) / len(sides):.0f} (target: 400 or fewer, and fewer than net_ib's; "
      f"the first target was 1500)")
print("# hottest plugin functions (self Ir over the timed region):")
for mode, rank, top in hot:
    for t in top[:3]:
        print(f"#   {mode} rank {rank}: {t['ir']:>9}  {t['function'][:90]}")
PY
