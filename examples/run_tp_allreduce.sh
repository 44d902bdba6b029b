#!/usr/bin/env bash
# run_tp_allreduce.sh: runs tp_allreduce.py with torchrun across nodes through the RoCE plugin.
# Start it on every node with the same MASTER_ADDR and its own NODE_RANK. The variables below
# are the whole integration: where the plugin is, that it must be used, which GID, which
# traffic class, and that GPUDirect is required.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  cat <<EOF
Usage: NODE_RANK=N MASTER_ADDR=HOST run_tp_allreduce.sh [--print-env] [tp_allreduce.py args...]

Environment (defaults in brackets):
  NNODES [2]  NPROC_PER_NODE [8]  NODE_RANK [0]  MASTER_ADDR [127.0.0.1]  MASTER_PORT [29500]
  NCCL_NET_PLUGIN      the plugin: a path, or "roce" for libnccl-net-roce.so on the library path [roce]
  NCCL_IB_GID_INDEX    a GID index from roce-show-gids, or unset for the plugin's automatic choice [unset]
  NCCL_ROCE_DSCP       DSCP of the lossless class (TC = DSCP << 2) [26]; or NCCL_ROCE_TC
  NCCL_ROCE_REQUIRE_GDR  1: refuse to start without GPUDirect RDMA [1]
--print-env prints the NCCL variables and the torchrun command without running them.
EOF
}

print_only=0
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  usage
  exit 0
fi
if [[ ${1:-} == --print-env ]]; then
  print_only=1
  shift
fi

export NCCL_NET_PLUGIN=${NCCL_NET_PLUGIN:-roce}
# Fail instead of falling back to NCCL's IB or Socket transport when the plugin cannot start.
export NCCL_NET=RoCE
# Unset = automatic (first RoCE v2 GID of NCCL_IB_ADDR_FAMILY); set it only to pin an index.
if [[ -n ${NCCL_IB_GID_INDEX:-} ]]; then export NCCL_IB_GID_INDEX; fi
if [[ -n ${NCCL_ROCE_TC:-} ]]; then
  export NCCL_ROCE_TC
else
  export NCCL_ROCE_DSCP=${NCCL_ROCE_DSCP:-26}
fi
export NCCL_ROCE_REQUIRE_GDR=${NCCL_ROCE_REQUIRE_GDR:-1}
export NCCL_DEBUG=${NCCL_DEBUG:-INFO}
export NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET}

cmd=(torchrun --nnodes "${NNODES:-2}" --nproc-per-node "${NPROC_PER_NODE:-8}" --node-rank "${NODE_RANK:-0}"
  --master-addr "${MASTER_ADDR:-127.0.0.1}" --master-port "${MASTER_PORT:-29500}"
  "$here/tp_allreduce.py" "$@")

env | grep -E '^NCCL_' | sort
printf '%q ' "${cmd[@]}"
printf '\n'
((print_only)) && exit 0
command -v torchrun >/dev/null || { echo "run_tp_allreduce.sh: torchrun not found: install PyTorch (pip install torch)" >&2; exit 5; }
exec "${cmd[@]}"
