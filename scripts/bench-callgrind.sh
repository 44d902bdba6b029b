#!/usr/bin/env bash
# Counts the CPU instructions the plugin executes per message, with callgrind, collecting only
# the plugin's own code (self cost of every function in libnccl-net-roce.so; libc, libibverbs and
# vroce excluded).
#
# Two ranks run in roce-bench's cluster mode, each under callgrind on its own vroce device. Every
# measurement is taken twice, with N1 and N2 messages; the difference divided by N2-N1 is the
# cost per message, so init, connection setup, memory registration, warm-up and verification
# cancel out exactly. roce-bench sleeps between polls that find nothing (--poll-sleep-us), so
# idle polling does not inflate the figure; the test() calls per message are reported beside it.
#   pingpong: each rank sends and receives one message per round trip -> per side = Ir / 2
#   bw:       rank 0 only sends, rank 1 only receives -> the send side and the receive side
#
# usage: scripts/bench-callgrind.sh [--build DIR] [--api vN] [--size BYTES] [--n1 N] [--n2 N]
#                                   [--modes pingpong,bw] [--keep DIR]
# Environment: ROCE_CG_ADDRESSES="127.0.5.240,127.0.5.241" (the two vroce device addresses).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,17p' "$0" >&2
  exit 2
}

build=""
api=v8
size=8
n1=200
n2=1200
modes=pingpong,bw
keep=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --api) api=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --n1) n1=$2; shift 2 ;;
    --n2) n2=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) usage ;;
    *) echo "bench-callgrind: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $n2 -gt $n1 ]] || { echo "bench-callgrind: --n2 must exceed --n1" >&2; exit 2; }

if [[ -z $build ]]; then
  for candidate in build/release build/ci; do
    if [[ -x $candidate/bin/roce-bench ]]; then
      build=$candidate
      break
    fi
  done
fi
bench=${build:-build/release}/bin/roce-bench
plugin=${build:-build/release}/lib/libnccl-net-roce.so
vroce=${build:-build/release}/vroce/lib/libibverbs.so.1
for f in "$bench" "$plugin" "$vroce"; do
  if [[ ! -e $f ]]; then
    echo "bench-callgrind: $f is missing; build it first:" >&2
    echo "  cmake --preset release -G Ninja && cmake --build build/release --target roce-bench nccl_net_roce vroce" >&2
    exit 1
  fi
done
command -v valgrind >/dev/null || { echo "bench-callgrind: valgrind is not installed (scripts/install-deps.sh)" >&2; exit 1; }

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

# run MODE N: both ranks under callgrind; leaves $work/MODE.N.rank{0,1}.out and .json
run() {
  local mode=$1 n=$2 port
  port=$(free_port)
  local common=(-m "$mode" -b "$size" -e "$size" -n "$n" -w 10 --api "$api"
    --poll-sleep-us 50 --timeout 600 --nranks 2 --rendezvous "$addr0:$port")
  pids=()
  for rank in 0 1; do
    local addr=$addr0
    [[ $rank == 1 ]] && addr=$addr1
    VROCE_DEVICES="cg$rank=$addr" NCCL_IB_HCA="=cg$rank" NCCL_IBVERBS_LIB="$(realpath "$vroce")" \
      valgrind --tool=callgrind --callgrind-out-file="$work/$mode.$n.rank$rank.out" \
      "$bench" "${common[@]}" --rank "$rank" --plugin "$(realpath "$plugin")" \
      --json="$work/$mode.$n.json" >"$work/$mode.$n.rank$rank.log" 2>&1 &
    pids+=($!)
  done
  local status=0
  for pid in "${pids[@]}"; do
    wait "$pid" || status=1
  done
  pids=()
  if [[ $status != 0 ]]; then
    echo "bench-callgrind: the $mode run with $n messages failed:" >&2
    tail -n 20 "$work/$mode.$n.rank0.log" "$work/$mode.$n.rank1.log" >&2
    exit 1
  fi
}

echo "# bench-callgrind: plugin instructions per message ($size B, api $api, messages $n1 and $n2)"
echo "# plugin $(realpath "$plugin"), vroce $(realpath "$vroce"), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
IFS=, read -r -a mode_list <<<"$modes"
for mode in "${mode_list[@]}"; do
  case $mode in pingpong | bw) ;; *) echo "bench-callgrind: --modes takes pingpong and bw" >&2; exit 2 ;; esac
  echo "# running $mode under callgrind ($n1 then $n2 messages, 2 ranks)..." >&2
  run "$mode" "$n1"
  run "$mode" "$n2"
done

python3 - "$work" "$n1" "$n2" "${mode_list[@]}" <<'PY'
import json, subprocess, sys
work, n1, n2, modes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
tool = "scripts/callgrind-object-ir.py"

def plugin_ir(mode, n, rank):
    out = subprocess.run([sys.executable, tool, "--json", "libnccl-net-roce.so",
                          f"{work}/{mode}.{n}.rank{rank}.out"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)[0]["object_ir"]

def calls(mode, n, rank):
    return json.load(open(f"{work}/{mode}.{n}.json"))["plugin_calls"][rank]

dn = n2 - n1
print(f"# {'mode':<9} {'rank':>4} {'role':<14} {'Ir/message':>11} {'isend':>6} {'irecv':>6}"
      f" {'test':>6} {'pending':>8}   (calls per message)")
summary = {}
for mode in modes:
    for rank in (0, 1):
        d_ir = plugin_ir(mode, n2, rank) - plugin_ir(mode, n1, rank)
        c1, c2 = calls(mode, n1, rank), calls(mode, n2, rank)
        per = {k: (c2[k] - c1[k]) / dn for k in ("isend", "irecv", "test", "test_pending")}
        if mode == "pingpong":
            role, per_message = "send+recv/2", d_ir / dn / 2
            per = {k: v / 2 for k, v in per.items()}
        else:
            role, per_message = ("send side" if rank == 0 else "receive side"), d_ir / dn
        summary[(mode, rank)] = per_message
        print(f"  {mode:<9} {rank:>4} {role:<14} {per_message:>11.0f} {per['isend']:>6.2f}"
              f" {per['irecv']:>6.2f} {per['test']:>6.2f} {per['test_pending']:>8.2f}")
sides = [v for v in summary.values()]
print(f"# plugin instructions per message per side: max {max(sides):.0f}, "
      f"mean {sum(sides) / len(sides):.0f} (target <= 1500)")
PY
