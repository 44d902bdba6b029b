#!/usr/bin/env bash
# Debian's perftest over vroce, as a table: 8-byte one-way latency of ib_send_lat (polls its CQ)
# and ib_write_lat (spins on memory; needs vroce's progress without the application), their
# ratio, single-QP bandwidth of ib_write_bw/ib_read_bw at 64 KiB and 1 MiB, and the CPU the
# progress threads used (progress_thread_cpu_us), for each VROCE_SPIN_US given. Each figure is
# the median of ROUNDS runs (perftest's t_typical for latency, BW average for bandwidth).
#
#   scripts/bench-perftest.sh [build dir (build/ci)] [spin values ("0 50")] [rounds (3)]
set -euo pipefail

build=${1:-build/ci}
spins=${2:-"0 50"}
rounds=${3:-3}
lib=$(cd "$build/vroce/lib" && pwd)
command -v ib_write_lat >/dev/null || { echo "perftest is not installed (apt-get install perftest)" >&2; exit 1; }
work=$(mktemp -d /tmp/vr-benchpt.XXXXXX)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$lib VROCE_DEVICES=vrbS=127.0.6.21,vrbC=127.0.6.22
port=$((21000 + $$ % 20000))

# run <prog> <field> <args...>: prints the client's figure and both sides' progress CPU (s)
run() {
  local prog=$1 field=$2; shift 2
  port=$((port + 1))
  VROCE_STATS_FILE=$work/s.json timeout 120 "$prog" -d vrbS -x 3 -p "$port" "$@" >"$work/s.log" 2>&1 &
  local server=$!
  local client_ok=0
  for _ in $(seq 100); do
    if VROCE_STATS_FILE=$work/c.json timeout 120 "$prog" -d vrbC -x 3 -p "$port" "$@" 127.0.6.21 \
      >"$work/c.log" 2>&1; then
      client_ok=1
      break
    fi
    grep -q "Couldn't connect" "$work/c.log" || break
    sleep 0.1
  done
  wait "$server" || true
  [[ $client_ok -eq 1 ]] || { echo "$prog $*: failed" >&2; cat "$work/c.log" >&2; exit 1; }
  python3 - "$work/c.log" "$field" "$work/s.json" "$work/c.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
for i, line in enumerate(lines):
    if line.strip().startswith("#bytes"):
        header = line.split()
        data = next(l.split() for l in lines[i + 1:] if l.split() and l.split()[0].isdigit())
        field = sys.argv[2]
        value = data[header.index(field)] if field in header else data[3]
        cpu = sum(json.load(open(p))["progress_thread_cpu_us"] for p in sys.argv[3:5]) / 1e6
        print(value, f"{cpu:.2f}")
        break
PY
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }

printf "%-8s %-14s %-14s %-7s %-12s %-12s %-12s %-12s %s\n" spin_us send_lat_8B write_lat_8B ratio \
  write_bw_64K write_bw_1M read_bw_64K read_bw_1M progress_cpu_s
for spin in $spins; do
  export VROCE_SPIN_US=$spin
  declare -A col=()
  cpu_total=0
  for name in send_lat write_lat write_bw_64K write_bw_1M read_bw_64K read_bw_1M; do
    : >"$work/$name"
  done
  for _ in $(seq "$rounds"); do
    run ib_send_lat t_typical[usec] -s 8 -n 5000 >>"$work/send_lat"
    run ib_write_lat t_typical[usec] -s 8 -n 5000 >>"$work/write_lat"
    run ib_write_bw bw -s 65536 -n 2000 --report_gbits >>"$work/write_bw_64K"
    run ib_write_bw bw -s 1048576 -n 200 --report_gbits >>"$work/write_bw_1M"
    run ib_read_bw bw -s 65536 -n 2000 --report_gbits >>"$work/read_bw_64K"
    run ib_read_bw bw -s 1048576 -n 200 --report_gbits >>"$work/read_bw_1M"
  done
  for name in send_lat write_lat write_bw_64K write_bw_1M read_bw_64K read_bw_1M; do
    col[$name]=$(cut -d' ' -f1 "$work/$name" | median)
  done
  cpu_total=$(cat "$work"/send_lat "$work"/write_lat "$work"/*bw* | awk '{s += $2} END {printf "%.2f", s}')
  ratio=$(awk -v w="${col[write_lat]}" -v s="${col[send_lat]}" 'BEGIN {printf "%.2f", w / s}')
  printf "%-8s %-14s %-14s %-7s %-12s %-12s %-12s %-12s %s\n" "$spin" "${col[send_lat]} us" \
    "${col[write_lat]} us" "$ratio" "${col[write_bw_64K]}" "${col[write_bw_1M]}" \
    "${col[read_bw_64K]}" "${col[read_bw_1M]}" "$cpu_total"
done
echo "bandwidth in Gb/s (perftest BW average, one QP); latency perftest t_typical, one-way"
