#!/usr/bin/env bash
# run_all_reduce.sh: nccl-tests' all_reduce_perf through the RoCE plugin, for one scenario file
# (one-node.env, two-nodes.env, tp8-eight-nodes.env), with three verdicts on the output:
#   1. NCCL used the RoCE plugin (no silent fallback to NET/IB or NET/Socket);
#   2. all_reduce_perf's own result check and NCCL_TESTS_MIN_BW gate (its exit status);
#   3. the 1 GiB row's out-of-place bus bandwidth is at least MIN_PEAK_BUSBW.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  cat <<EOF
Usage: run_all_reduce.sh [--dry-run] [--hosts H1,H2,...] [--log FILE] SCENARIO.env

Runs all_reduce_perf ${here##*/}/common.env's arguments (-b 8 -e 1G -f 2 -g 1 -c 1) with the
plugin's environment. One node: GPUS_PER_NODE processes through mpirun on this host. Several
nodes: mpirun (Open MPI) on --hosts, GPUS_PER_NODE slots each, with every NCCL_* variable
forwarded. The log goes to FILE (default all_reduce_<scenario>.log).

Environment:
  NCCL_TESTS_BIN   folder with all_reduce_perf (an MPI=1 build of nccl-tests) [PATH]
  MPIRUN           the Open MPI launcher [mpirun]
  NCCL_NET_PLUGIN  the plugin to load [roce, i.e. libnccl-net-roce.so on the library path]
  any NCCL_*       overrides common.env and the scenario file

Exit status: 0 all verdicts pass; 1 a verdict failed; 2 bad usage; 5 a tool is missing.
EOF
}

dry_run=0
hosts=""
log=""
scenario=""
while (($#)); do
  case $1 in
    --dry-run) dry_run=1 ;;
    --hosts) [[ $# -ge 2 ]] || { echo "run_all_reduce.sh: --hosts needs a value" >&2; exit 2; }; hosts=$2; shift ;;
    --log) [[ $# -ge 2 ]] || { echo "run_all_reduce.sh: --log needs a value" >&2; exit 2; }; log=$2; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "run_all_reduce.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) scenario=$1 ;;
  esac
  shift
done
[[ -n $scenario ]] || { usage >&2; exit 2; }
[[ -f $scenario ]] || scenario=$here/$scenario
[[ -f $scenario ]] || { echo "run_all_reduce.sh: no scenario file $scenario" >&2; exit 2; }

NODES=""
GPUS_PER_NODE=${GPUS_PER_NODE:-}
MIN_PEAK_BUSBW=${MIN_PEAK_BUSBW:-}
NCCL_TESTS_ARGS=()
# shellcheck source-path=SCRIPTDIR source=common.env
source "$here/common.env"
# shellcheck source-path=SCRIPTDIR source=two-nodes.env
source "$scenario"
for v in NODES GPUS_PER_NODE MIN_PEAK_BUSBW; do
  [[ ${!v} =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "run_all_reduce.sh: $scenario sets no numeric $v" >&2; exit 2; }
done

bin=${NCCL_TESTS_BIN:+$NCCL_TESTS_BIN/}all_reduce_perf
mpirun=${MPIRUN:-mpirun}
nprocs=$((NODES * GPUS_PER_NODE))
# Everything NCCL reads, forwarded to every rank (Open MPI: -x NAME).
forward=()
while IFS='=' read -r name _; do
  forward+=(-x "$name")
done < <(env | grep -E '^(NCCL_|LD_LIBRARY_PATH=|CUDA_VISIBLE_DEVICES=)' | sort)
cmd=("$mpirun" --allow-run-as-root --bind-to numa -np "$nprocs")
if ((NODES > 1)); then
  [[ -n $hosts ]] || { echo "run_all_reduce.sh: $NODES nodes: give them with --hosts h1,h2,..." >&2; exit 2; }
  IFS=, read -r -a host_list <<<"$hosts"
  ((${#host_list[@]} == NODES)) || { echo "run_all_reduce.sh: $scenario needs $NODES hosts, --hosts names ${#host_list[@]}" >&2; exit 2; }
  spec=""
  for h in "${host_list[@]}"; do spec+="${spec:+,}$h:$GPUS_PER_NODE"; done
  cmd+=(-H "$spec")
fi
cmd+=("${forward[@]}" "$bin" "${NCCL_TESTS_ARGS[@]}")
name=$(basename "$scenario" .env)
log=${log:-all_reduce_$name.log}

printf 'run_all_reduce.sh: %s: %s node(s) x %s GPU(s), plugin %s, NCCL_NET=%s, NCCL_ALGO=%s, gates: NCCL_TESTS_MIN_BW=%s (average), %s GB/s (1 GiB busbw)\n' \
  "$name" "$NODES" "$GPUS_PER_NODE" "$NCCL_NET_PLUGIN" "$NCCL_NET" "$NCCL_ALGO" "$NCCL_TESTS_MIN_BW" "$MIN_PEAK_BUSBW"
printf '%q ' "${cmd[@]}"
printf '\n'
if [[ $dry_run == 1 ]]; then
  exit 0
fi
command -v "$mpirun" >/dev/null || { echo "run_all_reduce.sh: $mpirun not found: install Open MPI (apt-get install openmpi-bin) or set MPIRUN" >&2; exit 5; }
command -v "$bin" >/dev/null || { echo "run_all_reduce.sh: $bin not found: build nccl-tests with MPI=1 and set NCCL_TESTS_BIN" >&2; exit 5; }

set +e
"${cmd[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e

verdict=0
# 1. Which network NCCL used: the plugin's name, or a fallback.
if grep -q 'Using network RoCE' "$log"; then
  echo "verdict: network: NCCL used the RoCE plugin"
else
  used=$(grep -o 'Using network [A-Za-z]*' "$log" | sort -u | tr '\n' ' ')
  echo "verdict: FAIL network: NCCL did not use the RoCE plugin (${used:-no 'Using network' line; set NCCL_DEBUG=INFO}): see docs/troubleshooting.md, silent fallback"
  verdict=1
fi
# NCCL names each channel's transport: "via NET/RoCE/0/GDRDMA" with GPUDirect, without the
# suffix when the NIC reads and writes a host bounce buffer.
channels=$(grep -cE 'via NET/RoCE/[0-9]+' "$log" || true)
staged=$(grep -E 'via NET/RoCE/[0-9]+' "$log" | grep -vc 'GDRDMA' || true)
if ((channels > 0 && staged > 0)); then
  echo "verdict: FAIL gpudirect: ${staged} of ${channels} NET/RoCE channels without GDRDMA (host staging): see docs/troubleshooting.md, GPUDirect downgrade"
  verdict=1
elif ((channels > 0)); then
  echo "verdict: gpudirect: all ${channels} NET/RoCE channels use GDRDMA"
fi
# 2. all_reduce_perf's own verdict: wrong results or below 90% of NCCL_TESTS_MIN_BW.
avg=$(sed -nE 's/^# Avg bus bandwidth *: *([0-9.]+).*/\1/p' "$log" | tail -n1)
wrong=$(sed -nE 's/^# Out of bounds values *: *([0-9]+).*/\1/p' "$log" | tail -n1)
if ((rc != 0)); then
  echo "verdict: FAIL all_reduce_perf exited $rc (wrong results: ${wrong:-?}, average busbw ${avg:-?} GB/s, NCCL_TESTS_MIN_BW=$NCCL_TESTS_MIN_BW)"
  verdict=1
else
  echo "verdict: all_reduce_perf passed (wrong results: ${wrong:-?}, average busbw ${avg:-?} GB/s)"
fi
# 3. Peak: the 1 GiB row, out-of-place busbw (8th column).
peak=$(awk '$1 == 1073741824 && $2 ~ /^[0-9]+$/ { bw = $8 } END { if (bw != "") print bw }' "$log")
if [[ -z $peak ]]; then
  echo "verdict: FAIL peak: no 1 GiB row in the output"
  verdict=1
elif awk -v p="$peak" -v m="$MIN_PEAK_BUSBW" 'BEGIN { exit !(p + 0 >= m + 0) }'; then
  echo "verdict: peak busbw at 1 GiB ${peak} GB/s >= ${MIN_PEAK_BUSBW}"
else
  echo "verdict: FAIL peak busbw at 1 GiB ${peak} GB/s < ${MIN_PEAK_BUSBW}: run diagnose_roce.sh on every node (PFC, ECN, GPUDirect, PCIe paths)"
  verdict=1
fi
exit "$verdict"
