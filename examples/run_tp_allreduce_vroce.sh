#!/usr/bin/env bash
# run_tp_allreduce_vroce.sh: tp_allreduce.py on one host with one GPU per rank, where each rank
# gets its own vroce device (its own loopback address, like a NIC of its own) and NVLink and
# shared memory are off, so every byte of the all-reduce goes through the plugin, vroce's RoCEv2
# wire format and GPUDirect (vroce reaches GPU memory through the CUDA driver API). This is the
# GPU proof of the plugin on a machine without RDMA NICs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

usage() {
  cat <<EOF
Usage: run_tp_allreduce_vroce.sh [--print-env] [tp_allreduce.py args...]

Environment (defaults in brackets):
  NPROC_PER_NODE [number of GPUs, at least 2]
  BUILD_DIR      the build tree with lib/libnccl-net-roce.so and vroce/lib [$repo/build/release,
                 the README's build]
  ROCE_EXAMPLE_VROCE_BASE  first rank's address; rank r uses base+r [127.0.0.21]
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

build=${BUILD_DIR:-$repo/build/release}
plugin=$build/lib/libnccl-net-roce.so
vroce=$build/vroce/lib/libibverbs.so.1
if ((print_only == 0)); then
  for f in "$plugin" "$vroce"; do
    [[ -f $f ]] || { echo "run_tp_allreduce_vroce.sh: $f is missing: build it (cmake --preset release -G Ninja && cmake --build --preset release), or point BUILD_DIR at a build tree" >&2; exit 5; }
  done
fi
nproc=${NPROC_PER_NODE:-$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)}
if ((print_only == 0 && nproc < 2)); then
  echo "run_tp_allreduce_vroce.sh: needs at least 2 GPUs (found $nproc); set NPROC_PER_NODE" >&2
  exit 3
fi

export NCCL_NET_PLUGIN=$plugin
export NCCL_NET=RoCE
# The plugin loads vroce instead of the system libibverbs.
export NCCL_IBVERBS_LIB=$vroce
# tp_allreduce.py sets VROCE_DEVICES=vroce<LOCAL_RANK>=<base + LOCAL_RANK> in each rank.
export ROCE_EXAMPLE_VROCE_BASE=${ROCE_EXAMPLE_VROCE_BASE:-127.0.0.21}
# Keep NCCL off NVLink and shared memory: all traffic goes rank to rank over the network.
export NCCL_P2P_DISABLE=1
export NCCL_SHM_DISABLE=1
export NCCL_ROCE_DSCP=${NCCL_ROCE_DSCP:-26}
export NCCL_ROCE_REQUIRE_GDR=${NCCL_ROCE_REQUIRE_GDR:-1}
export NCCL_DEBUG=${NCCL_DEBUG:-INFO}
export NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET}
# vroce's GPUDirect copies go through the CUDA driver. By default its helper process makes them
# (VROCE_GPU_COPIES=helper), opening the ranks' buffers through CUDA IPC, which memory from
# cuMemCreate lacks: NCCL allocates with cudaMalloc instead. With VROCE_GPU_COPIES=in-process they
# are made inside each rank, so no rank thread may hold the driver's lock while waiting for the
# GPU: every kernel is loaded at start, and the ranks wait for the GPU every 32 all-reduces (a
# later --sync-every wins). See docs/vroce.md, "GPU memory"; real NICs need none of this.
bounded=()
if [[ ${VROCE_GPU_COPIES:-helper} == in-process ]]; then
  export CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-EAGER}
  bounded=(--sync-every 32)
else
  export NCCL_CUMEM_ENABLE=${NCCL_CUMEM_ENABLE:-0}
fi

cmd=(torchrun --standalone --nproc-per-node "$nproc" "$here/tp_allreduce.py" "${bounded[@]}" "$@")
env | grep -E '^(NCCL_|ROCE_EXAMPLE_|CUDA_MODULE_LOADING=|VROCE_GPU_COPIES=)' | sort
printf '%q ' "${cmd[@]}"
printf '\n'
((print_only)) && exit 0
command -v torchrun >/dev/null || { echo "run_tp_allreduce_vroce.sh: torchrun not found: install PyTorch (pip install torch)" >&2; exit 5; }
exec "${cmd[@]}"
