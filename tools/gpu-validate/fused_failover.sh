#!/usr/bin/env bash
# fused_failover.sh: a member port of a fused NIC goes down in the middle of NCCL all-reduces, and
# comes back (issue 48, failover inside NCCL). Two ranks forked on GPU 0 (nccl_allreduce_check),
# each with two vroce devices that NCCL fuses into one virtual NIC (ROCE_EXAMPLE_VROCE_MEMBERS=2);
# rank 0's second member (vroce1) goes DOWN at DOWN_MS and ACTIVE again at UP_MS after its devices
# came up (VROCE_PORT_EVENTS, only in rank 0's process). The retry budget is small
# (NCCL_IB_TIMEOUT=14, about 0.5 s), so the outage outlasts it and the connections on that member
# fail over to the other one, then take it back.
#
# Passes when every element of every all-reduce is right (PASS), NCCL fused the devices, the
# plugin logged the port going down and up, and at least one connection logged a recovery; prints
# the recovery WARNs. Needs root (in_vroce_sysfs.sh), the release build and nccl_allreduce_check
# built for the node (its header says how).
#
# Usage: tools/gpu-validate/fused_failover.sh BUILD CHECK_BINARY OUT [MODE [MAX_BYTES [ITERS]]]
#   MODE host (NCCL_NET_GDR_LEVEL=LOC) or gdr-dmabuf [host]; MAX_BYTES [64M]; ITERS [400]
# Environment: NCCL_LIB_DIR (the libnccl.so.2 to run, default PyTorch's), DOWN_MS [4000],
# UP_MS [14000].
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
(($# >= 3)) || { sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2; }
build=$(cd "$1" && pwd)
check=$2
out=$3
mode=${4:-host}
max_bytes=${5:-64M}
iters=${6:-400}
down_ms=${DOWN_MS:-4000}
up_ms=${UP_MS:-14000}
case $max_bytes in *K) max_bytes=$((${max_bytes%K} << 10)) ;; *M) max_bytes=$((${max_bytes%M} << 20)) ;; esac
[[ -x $check ]] || { echo "fused_failover.sh: $check is not an executable" >&2; exit 2; }
mkdir -p "$out/nccl-logs"
out=$(cd "$out" && pwd)

nccl_lib=${NCCL_LIB_DIR:-$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))')}
vroce_dir=$build/vroce/lib
mode_env=(NCCL_NET_GDR_LEVEL=LOC)
if [[ $mode == gdr-dmabuf ]]; then
  # vroce's copy helper opens the ranks' buffers through CUDA IPC, which cuMem memory lacks.
  mode_env=(NCCL_NET_GDR_LEVEL=SYS NCCL_DMABUF_ENABLE=1 NCCL_CUMEM_ENABLE=0 NCCL_ROCE_REQUIRE_GDR=1)
elif [[ $mode != host ]]; then
  echo "fused_failover.sh: MODE is host or gdr-dmabuf, not $mode" >&2
  exit 2
fi

echo "fused_failover.sh: $mode, 2 ranks x 2 members, vroce1 (rank 0, member 1) down at ${down_ms} ms," \
  "up at ${up_ms} ms; 8 B to $max_bytes B, $iters all-reduces a size"
status=0
env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
  NCCL_DEBUG_FILE="$out/nccl-logs/rank.%h.%p.log" \
  NCCL_NET_PLUGIN="$build/lib/libnccl-net-roce.so" NCCL_NET=RoCE NCCL_IBVERBS_LIB="$vroce_dir/libibverbs.so.1" \
  NCCL_ROCE_DSCP=26 NCCL_IB_TIMEOUT=14 "${mode_env[@]}" \
  ROCE_EXAMPLE_VROCE_BASE=127.0.0.21 ROCE_EXAMPLE_VROCE_MEMBERS=2 VROCE_LIB_DIR="$vroce_dir" \
  ROCE_EXAMPLE_PORT_EVENTS_RANK=0 VROCE_PORT_EVENTS="vroce1:down@$down_ms,vroce1:up@$up_ms" \
  LD_LIBRARY_PATH="$vroce_dir:$nccl_lib:${LD_LIBRARY_PATH:-}" \
  "$here/in_vroce_sysfs.sh" 4 "$check" 2 "$max_bytes" "$iters" 2>&1 | tee "$out/run.log" || status=1

logs=("$out"/nccl-logs/rank.*.log)
verdict() {  # what, grep pattern
  if grep -q -- "$2" "${logs[@]}"; then echo "  yes: $1"; else echo "  NO: $1"; status=1; fi
}
echo "what the ranks' logs say:"
if grep -q '^PASS' "$out/run.log"; then echo "  yes: every element right (PASS)"; else echo "  NO: PASS"; status=1; fi
verdict "NCCL fused each rank's two devices" "makeVDevice: virtual NIC"
verdict "vroce1's port went down" "dev vroce1 port 1: async event IBV_EVENT_PORT_ERR"
verdict "vroce1's port came back" "dev vroce1 port 1: async event IBV_EVENT_PORT_ACTIVE"
verdict "a connection recovered" "recovered in .* ms (epoch"
echo "recoveries:"
grep -ho 'NET/RoCE.*recovered in .*' "${logs[@]}" | cut -c1-300 | sed 's/^/  /' || true
echo "errors:"
grep -hE 'NCCL WARN .*(failed|error|lost)' "${logs[@]}" | grep -vE 'PORT_ERR|recovered in' | head -n 5 |
  sed 's/^/  /' || true
if ((status == 0)); then echo "verdict: PASS"; else echo "verdict: FAIL"; fi
exit $status
