#!/usr/bin/env bash
# What vroce costs per message of an 8-byte ping-pong, CPU instructions (callgrind) and system
# calls (strace -f -c), with Debian's ib_send_lat over two vroce devices of one machine, server
# and client each under the tool. Per side, per message of the ping-pong: each side sends and
# receives one data packet and one ACK.
#
# ib_send_lat -e (waits on a completion channel, polls only when woken): the packet path alone,
# post_send -> build -> ICRC -> sendmmsg and recvmmsg -> parse -> ICRC check -> placement -> CQE
# -> ACK, plus the wake-ups. Each figure is the difference between a run of N2 and one of N1
# iterations divided by N2 - N1, so setup and teardown drop out; it barely moves between runs.
#   vroce-instr: self cost of the functions in vroce's libibverbs.so.1 (libc excluded)
#   all-instr:   the whole process (perftest's own loop and timing included)
#   syscalls:    every system call of the process (all threads), and the busiest ones by name
# ib_send_lat (busy-polls its CQ): how many polls a message took and what one cost on average
# (most find nothing; one that finds the engine idle receives on the polling thread), and the
# system calls, over one run of N2 divided by N2; Ir/recv is the self cost of UdpPort's receive
# code (packet_io/udp_port.cpp, needs the library's debug info) per recvmmsg call, most of which find
# nothing. The poll count follows timing (callgrind slows each side differently), and Ir/poll
# with it (the more empty polls, the cheaper the average), so compare builds on Ir/recv.
#
# The progress thread does not spin (VROCE_SPIN_US=0). Under callgrind and strace the programs
# run slower than natively: compare builds only in alternating runs on one machine. Callgrind
# runs with --fair-sched=yes: valgrind runs one thread of a process at a time, and without it a
# thread that spins (ib_write_lat's, polling memory) starves the progress thread.
#
# usage: scripts/vroce-per-message-cost.sh [--runs N] [--n1 N] [--n2 N] LIBDIR [LIBDIR...]
#   LIBDIR  a folder with a vroce libibverbs.so.1 (e.g. build/ci/vroce/lib); several are
#           measured in turn, alternating, --runs times (default 2)
# Environment: VROCE_COST_ADDRESSES="127.0.5.250,127.0.5.251" (the two devices' addresses).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=2
n1=1000
n2=3000
libs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --n1) n1=$2; shift 2 ;;
    --n2) n2=$2; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0" >&2; exit 2 ;;
    *) libs+=("$1"); shift ;;
  esac
done
[[ ${#libs[@]} -gt 0 ]] || { sed -n '2,20p' "$0" >&2; exit 2; }
for tool in valgrind callgrind_annotate strace ib_send_lat; do
  command -v $tool >/dev/null || { echo "vroce-per-message-cost: $tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
for lib in "${libs[@]}"; do
  [[ -e $lib/libibverbs.so.1 ]] || { echo "vroce-per-message-cost: no libibverbs.so.1 in $lib" >&2; exit 1; }
done

IFS=, read -r server_ip client_ip <<<"${VROCE_COST_ADDRESSES:-127.0.5.250,127.0.5.251}"
work=$(mktemp -d /tmp/vroce-cost.XXXXXX)
trap 'rm -rf "$work"' EXIT
port=$((18000 + $$ % 2000))

# pair LIB CASE N TOOL OUT: one ib_*_lat server and client (CASE: the program and its options,
# "ib_send_lat-e" for ib_send_lat -e), each under TOOL (cg or strace).
pair() {
  local lib=$1 prog=${2%-e} n=$3 tool=$4 out=$5
  local -a extra=()
  [[ $2 == *-e ]] && extra=(-e)
  port=$((port + 1))
  local -a wrap_s wrap_c
  if [[ $tool == cg ]]; then
    wrap_s=(valgrind -q --tool=callgrind --fair-sched=yes --callgrind-out-file="$out.server.cg")
    wrap_c=(valgrind -q --tool=callgrind --fair-sched=yes --callgrind-out-file="$out.client.cg")
  else
    wrap_s=(strace -f -c -o "$out.server.strace")
    wrap_c=(strace -f -c -o "$out.client.strace")
  fi
  export LD_LIBRARY_PATH=$lib VROCE_DEVICES="vrS=$server_ip,vrC=$client_ip" VROCE_SPIN_US=0
  # A side that waits on a completion that never comes is stopped: no table row depends on it.
  timeout 300 "${wrap_s[@]}" "$prog" -d vrS -x 3 -p $port -s 8 -n "$n" "${extra[@]}" >"$out.server.log" 2>&1 &
  local server=$!
  for _ in $(seq 300); do
    ss -ltn | grep -q ":$port " && break
    sleep 0.1
  done
  if ! timeout 300 "${wrap_c[@]}" "$prog" -d vrC -x 3 -p $port -s 8 -n "$n" "${extra[@]}" "$server_ip" >"$out.client.log" 2>&1; then
    kill $server 2>/dev/null || true
    echo "vroce-per-message-cost: $prog ${extra[*]} $n under $tool with $lib failed or hung (300 s):" >&2
    cat "$out.client.log" "$out.server.log" >&2
    exit 1
  fi
  wait $server || { echo "vroce-per-message-cost: the $prog server failed:" >&2; cat "$out.server.log" >&2; exit 1; }
  unset LD_LIBRARY_PATH VROCE_DEVICES VROCE_SPIN_US
}

# The last 20 characters of a folder name, for the table.
label() {
  local l=$1
  ((${#l} > 20)) && l=${l: -20}
  echo "$l"
}

# Ir of one callgrind file: "vroce total" (vroce's object is LIB's libibverbs.so.1, resolved).
ir_of() {
  python3 scripts/callgrind-object-ir.py --json "$(basename "$(readlink -f "$2/libibverbs.so.1")")" "$1" |
    python3 -c 'import json,sys; d=json.load(sys.stdin)[0]; print(d["object_ir"], d["total_ir"])'
}

# Per message, from two strace -c summaries: "total name=count ..." (the five busiest calls).
syscalls_per_message() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys


def calls(path):
    out = {}
    for line in open(path):
        f = line.split()
        # "% time, seconds, usecs/call, calls, [errors,] syscall"; the total line names "total".
        if len(f) >= 5 and f[0].replace(".", "").isdigit() and f[3].isdigit():
            out[f[-1]] = int(f[3])
    return out


a, b, n = calls(sys.argv[1]), calls(sys.argv[2]), int(sys.argv[3])
d = {k: (v - a.get(k, 0)) / n for k, v in b.items()}
total = d.pop("total")
busiest = sorted(d.items(), key=lambda kv: -kv[1])[:5]
print(f"{total:.2f} " + " ".join(f"{k}={v:.2f}" for k, v in busiest))
EOF
}

printf "%-20s %-13s %-6s %11s %10s %8s %6s %8s %8s  %s\n" build case side vroce-instr all-instr \
  syscalls polls Ir/poll Ir/recv "busiest syscalls per message"
per() { echo "($1) / ($2)" | bc -l; }
for _ in $(seq "$runs"); do
  for lib in "${libs[@]}"; do
    # Waiting on events: the difference of two runs.
    prog=ib_send_lat-e
    for n in "$n1" "$n2"; do
      pair "$lib" "$prog" "$n" cg "$work/$prog.$n"
      pair "$lib" "$prog" "$n" strace "$work/$prog.$n"
    done
    for side in server client; do
      read -r o1 t1 <<<"$(ir_of "$work/$prog.$n1.$side.cg" "$lib")"
      read -r o2 t2 <<<"$(ir_of "$work/$prog.$n2.$side.cg" "$lib")"
      read -r calls busiest <<<"$(syscalls_per_message "$work/$prog.$n1.$side.strace" \
        "$work/$prog.$n2.$side.strace" "$((n2 - n1))")"
      printf "%-20s %-13s %-6s %11.0f %10.0f %8.2f %6s %8s %8s  %s\n" "$(label "$lib")" "$prog" \
        "$side" "$(per "$o2 - $o1" "$n2 - $n1")" "$(per "$t2 - $t1" "$n2 - $n1")" "$calls" - - - \
        "$busiest"
    done
    # Busy-polling: one run of N2, its polls and system calls over the whole run per message.
    prog=ib_send_lat
    pair "$lib" "$prog" "$n2" cg "$work/$prog.$n2"
    pair "$lib" "$prog" "$n2" strace "$work/$prog.$n2"
    for side in server client; do
      read -r calls busiest <<<"$(syscalls_per_message /dev/null "$work/$prog.$n2.$side.strace" "$n2")"
      cg=$work/$prog.$n2.$side.cg
      read -r polls poll_ir <<<"$(python3 scripts/callgrind-call-ir.py 'vroce::poll_cq(' "$cg")"
      read -r receives _ <<<"$(python3 scripts/callgrind-call-ir.py recvmmsg "$cg")"
      receive_ir=$(callgrind_annotate --threshold=100 "$cg" 2>/dev/null | grep 'packet_io/udp_port.cpp:' |
        grep -i receive | awk '{gsub(",", "", $1); s += $1} END {print s + 0}')
      printf "%-20s %-13s %-6s %11s %10s %8.2f %6.1f %8.0f %8.0f  %s\n" "$(label "$lib")" "$prog" \
        "$side" - - "$calls" "$(per "$polls" "$n2")" "$(per "$poll_ir" "$polls")" \
        "$(per "$receive_ir" "$receives")" "$busiest"
    done
  done
done
