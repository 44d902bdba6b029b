#!/usr/bin/env bash
# gpu-validate.sh: the plugin's proof on a GPU node, start to finish, with logs and a verdict.
#
# On one host with two or more GPUs and no RDMA NIC, every rank gets its own vroce device (its own
# loopback address), NVLink and shared memory are off (NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1), so
# every byte NCCL moves between GPUs goes through the plugin, vroce's RoCEv2 wire format and,
# where asked, GPUDirect (vroce reaches GPU memory through the CUDA driver). On a host with real
# RoCE NICs, set ROCE_GPU_VALIDATE_VROCE=0 and the same runs use the system libibverbs.
#
# It runs, each against NCCL's built-in Socket transport in the same run as the baseline:
#  1. tools/gpu-validate/collectives.py under torchrun: all_reduce (fp16, bf16, fp32),
#     all_gather, reduce_scatter, broadcast and send/recv from 8 B to 256 MiB, every result
#     verified, in three plugin modes: GPUDirect with dma-buf registration, GPUDirect with pointer
#     registration (nvidia-peermem style), and host-staged; each mode must show in NCCL's log
#     (GDRDMA on every network channel, or on none).
#  2. nccl-tests' all_reduce_perf -c 1 (8 B to 256 MiB), one process driving all GPUs (-g N), or
#     with --share-gpu one process per rank under mpirun (tools/gpu-validate/rank_identity.sh).
#  3. examples/tp_allreduce.py: the 16x8192 fp16 all-reduce's latency percentiles.
#  4. On request (--steps side_by_side:MODE): the same all-reduce sweep through this plugin,
#     NCCL's built-in IB transport and net_ib as a plugin on the same vroce devices, in rotating
#     rounds with an A/A control (tools/gpu-validate/side_by_side.py).
# Then it prints the comparison table (latency at 8 B and 256 KiB, busbw at 64 MiB), writes every
# figure to OUT/record.json (tools/gpu-validate/record.py; scripts/results-table makes the tables
# of docs/benchmarks.md from such records) and exits non-zero if any run failed, any element was
# wrong, or a run used another network or GDR mode.
#
# vroce's GPUDirect moves data with CUDA driver calls. By default (VROCE_GPU_COPIES=helper) its
# helper process makes them, which no rank thread can block; it opens the ranks' buffers through
# CUDA IPC, which memory from cuMemCreate lacks, so the GPUDirect runs over vroce set
# NCCL_CUMEM_ENABLE=0. With VROCE_GPU_COPIES=in-process the copies are made inside the ranks'
# processes and can deadlock against a rank thread that holds the driver's lock while waiting for
# the GPU (vroce/src/gpu/driver_lock_hazard.h); those runs load every kernel at start
# (CUDA_MODULE_LOADING=EAGER) and tp_allreduce.py synchronises every 32 all-reduces instead of
# queueing all of them. Real NICs need none of this.
#
# Needs: nvidia-smi, torchrun (PyTorch with NCCL), the built plugin and vroce, and an
# all_reduce_perf binary built from nccl-tests' public source for this node (not part of this
# project; pass its folder with --nccl-tests, or leave it out to skip step 2).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

usage() {
  cat <<USAGE
Usage: scripts/gpu-validate.sh [--build DIR] [--nccl-tests DIR] [--out DIR] [--quick]
  --build DIR       tree holding lib/libnccl-net-roce.so and vroce/lib/libibverbs.so.1 [build/release]
  --nccl-tests DIR  folder with nccl-tests' all_reduce_perf (skipped when not given)
  --out DIR         where logs, JSON and the summary go [gpu-validate-<date>]
  --quick           8 B to 1 MiB only (a smoke test of the procedure)
  --max-bytes SIZE  largest size of the sweeps (8 B and up, K/M/G suffixes) [256M]
  --iters N         timed, verified runs per size in collectives.py [3]
  --perf-iters N    all_reduce_perf -n [5]
  --steps LIST      comma-separated STEP:MODE, STEP one of collectives, tp_allreduce,
                    all_reduce_perf, side_by_side; MODE one of gdr-dmabuf, gdr-pointer, host,
                    socket; netib-gdr and netib-host (net_ib as a plugin, --netib) for
                    collectives and tp_allreduce; for collectives gdr-downgrade
                    (NCCL_NET_GDR_LEVEL at NCCL's default with NCCL_ROCE_REQUIRE_GDR=1: must fail
                    with the plugin's downgrade error); side_by_side takes gdr-dmabuf or host
                    [all but side_by_side and netib, the most telling first]
  --share-gpu       run NPROC ranks (default 2) on GPU 0, for a machine with one GPU: each rank
                    names its own host (NCCL_HOSTID) so NCCL connects them over the plugin;
                    all_reduce_perf runs one process per rank under mpirun (an all_reduce_perf
                    built with MPI=1), or is skipped, saying why, where mpirun is missing;
                    start MPS first (nvidia-cuda-mps-control -d) or the ranks time-slice the GPU
  --sweep PATH      tools/gpu-validate/nccl_allreduce_sweep built for this node (side_by_side)
  --netib PATH      net_ib as a plugin: nccl-rdma-sharp-plugins' libnccl-net.so, built from its
                    public source (docs/benchmarks.md); a side_by_side contender, and the netib
                    modes' plugin
  --sbs-ranks LIST  side_by_side's rank counts ["2 4 8"]
  --rounds N        side_by_side's rounds [3]
  --profiler LIB    load NCCL's example profiler (built from NCCL's public source for this node)
                    into the torchrun steps, with NCCL_PROFILE_EVENT_MASK [152: proxy ops, proxy
                    steps and network plugin events]; each step's traces go to
                    OUT/profiler/STEP-*, and the summary counts the plugin's QP events in them
  --ops LIST        collectives.py's op:dtype list [all of its ops]; for an NCCL built with
                    only some collectives (ONLY_FUNCS), e.g. all_reduce:float32,all_reduce:float16
  --nccl DIR        run every step on the libnccl.so.2 in DIR instead of PyTorch's (put first on
                    LD_LIBRARY_PATH and preloaded): an older or newer NCCL release, whose version
                    environment.txt records and whose loaded ncclNet table the summary names
  --dry-run         print each step's environment and command; run nothing
Environment: NPROC (GPUs to use, default all), NCCL_LIB_DIR (the libnccl.so.2 for
all_reduce_perf, default PyTorch's), ROCE_GPU_VALIDATE_VROCE=0 (use real NICs).
USAGE
}

build=$repo/build/release
nccl_tests=""
out=""
max_bytes=256M
iters=3
perf_iters=5
dry_run=0
share_gpu=0
profiler=""
ops=""
nccl_dir=""
sweep=""
netib=""
sbs_ranks="2 4 8"
rounds=3
steps=collectives:gdr-dmabuf,all_reduce_perf:gdr-dmabuf,all_reduce_perf:socket,tp_allreduce:gdr-dmabuf
steps+=,tp_allreduce:socket,collectives:socket,collectives:host,collectives:gdr-pointer,all_reduce_perf:host
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --nccl-tests) nccl_tests=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) max_bytes=1M; shift ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --perf-iters) perf_iters=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --share-gpu) share_gpu=1; shift ;;
    --profiler) profiler=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --nccl) nccl_dir=$2; shift 2 ;;
    --sweep) sweep=$2; shift 2 ;;
    --netib) netib=$2; shift 2 ;;
    --sbs-ranks) sbs_ranks=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "gpu-validate.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done

fail() { echo "gpu-validate.sh: $*" >&2; exit 3; }
plugin=$build/lib/libnccl-net-roce.so
vroce=$build/vroce/lib/libibverbs.so.1
use_vroce=${ROCE_GPU_VALIDATE_VROCE:-1}
[[ -f $plugin ]] || fail "$plugin is missing: build it (cmake --preset release && cmake --build --preset release)"
[[ $use_vroce == 0 || -f $vroce ]] || fail "$vroce is missing: build the vroce target"
if ((dry_run)); then
  gpus=${NPROC:-2}
else
  command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: this needs a GPU node"
  command -v torchrun >/dev/null || fail "torchrun not found: activate the Python environment with PyTorch"
  gpus=$(nvidia-smi -L | grep -c '^GPU' || true)
fi
if ((share_gpu)); then
  nproc=${NPROC:-2}
  ((gpus >= 1 && nproc >= 2)) || fail "--share-gpu needs a GPU and NPROC >= 2 (found $gpus, NPROC=$nproc)"
  export ROCE_EXAMPLE_SHARE_GPU=1  # tp_allreduce.py's shared_gpu_identity
  # Ranks on one GPU without MPS time-slice it: a ring's kernels never run at once, and every
  # transport reads tens of milliseconds per all-reduce (45.86 ms at 8 B, 4 ranks, H200). The
  # results stay correct, so this warns; side_by_side.py, whose figures would mean nothing,
  # refuses.
  if [[ ! -e ${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}/control ]]; then
    echo "gpu-validate.sh: WARNING: no MPS daemon serves the GPU: the $nproc ranks will time-slice it and" \
      "every time measures the GPU's scheduler; start it first with 'nvidia-cuda-mps-control -d' (root)" >&2
  fi
else
  nproc=${NPROC:-$gpus}
  ((nproc >= 2 && nproc <= gpus)) || fail "needs 2 or more GPUs (found $gpus, NPROC=${NPROC:-unset}); or --share-gpu"
fi
[[ -z $profiler || $dry_run == 1 || -f $profiler ]] || fail "profiler plugin $profiler is missing"
if [[ -n $nccl_dir ]]; then
  [[ $dry_run == 1 || -f $nccl_dir/libnccl.so.2 ]] || fail "--nccl $nccl_dir holds no libnccl.so.2"
  [[ $dry_run == 1 ]] || nccl_dir=$(cd "$nccl_dir" && pwd)
  # PyTorch finds its NCCL through its own run path; preloading wins over it, and the library
  # path serves what NCCL itself opens later.
  export LD_PRELOAD="$nccl_dir/libnccl.so.2${LD_PRELOAD:+:$LD_PRELOAD}"
  export LD_LIBRARY_PATH="$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
out=${out:-gpu-validate-$(date +%Y%m%d-%H%M%S)}
if ((!dry_run)); then
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
fi
torch_nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
nccl_lib_dir=${NCCL_LIB_DIR:-${nccl_dir:-$torch_nccl_dir}}

# Every run: network between the GPUs only, NCCL's INFO log per process.
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
# Ranks use 127.0.0.21, .22, ... (tp_allreduce.py's per_rank_vroce_device).
vroce_base=127.0.0.21

# True for a GPUDirect mode whose copies vroce makes through the CUDA driver.
vroce_gdr() { [[ $use_vroce != 0 && $1 == gdr-* ]]; }
# True where those copies are made inside the ranks' processes (see the header).
vroce_copies_in_process() { vroce_gdr "$1" && [[ ${VROCE_GPU_COPIES:-helper} == in-process ]]; }

# The environment of one mode, as `env` arguments.
mode_env() {
  if [[ $1 == netib-* ]]; then
    netib_env "$1"
    return
  fi
  local common=(NCCL_NET_PLUGIN="$plugin" NCCL_NET=RoCE NCCL_ROCE_DSCP=26)
  if [[ $use_vroce != 0 ]]; then
    common+=(NCCL_IBVERBS_LIB="$vroce" ROCE_EXAMPLE_VROCE_BASE="$vroce_base")
  fi
  if [[ -n $profiler ]]; then
    common+=(NCCL_PROFILER_PLUGIN="$profiler" NCCL_PROFILE_EVENT_MASK="${NCCL_PROFILE_EVENT_MASK:-152}")
  fi
  if vroce_copies_in_process "$1"; then
    common+=(CUDA_MODULE_LOADING=EAGER)  # see the header: no lazy kernel load while vroce copies
  elif vroce_gdr "$1"; then
    common+=(NCCL_CUMEM_ENABLE=0)  # see the header: buffers the copy helper can open
  fi
  case $1 in
    gdr-dmabuf) echo "${common[@]}" NCCL_NET_GDR_LEVEL=SYS NCCL_DMABUF_ENABLE=1 NCCL_ROCE_REQUIRE_GDR=1 ;;
    gdr-pointer) echo "${common[@]}" NCCL_NET_GDR_LEVEL=SYS NCCL_DMABUF_ENABLE=0 NCCL_ROCE_DMABUF=0 NCCL_ROCE_REQUIRE_GDR=1 ;;
    host) echo "${common[@]}" NCCL_NET_GDR_LEVEL=LOC ;;
    # NCCL_NET_GDR_LEVEL left at NCCL's default (PXB): a NIC with no PCI path (vroce) is too far,
    # so NCCL stages through host memory, which NCCL_ROCE_REQUIRE_GDR=1 must refuse.
    gdr-downgrade) echo "${common[@]}" NCCL_DMABUF_ENABLE=1 NCCL_ROCE_REQUIRE_GDR=1 ;;
    socket) echo NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo ;;
  esac
}
# net_ib as a plugin on vroce: it opens libibverbs by name (vroce's folder first on the path) and
# reads sysfs itself (in_vroce_sysfs.sh); NCCL 2.28 needs NCCL_GIN_TYPE=2 beside it (docs/vroce.md).
netib_env() {
  local common=(NCCL_NET_PLUGIN="$netib" NCCL_NET=IB NCCL_GIN_TYPE=2 ROCE_EXAMPLE_VROCE_BASE="$vroce_base"
                LD_LIBRARY_PATH="$(dirname "$vroce"):${LD_LIBRARY_PATH:-}" VROCE_LIB_DIR="$(dirname "$vroce")")
  case $1 in
    netib-gdr) echo "${common[@]}" NCCL_NET_GDR_LEVEL=SYS NCCL_DMABUF_ENABLE=1 NCCL_CUMEM_ENABLE=0 ;;
    netib-host) echo "${common[@]}" NCCL_NET_GDR_LEVEL=LOC ;;
  esac
}
# The command prefix of a mode: net_ib reads vroce's devices from sysfs, in a private namespace.
mode_wrapper() { [[ $1 == netib-* ]] && echo "$repo/tools/gpu-validate/in_vroce_sysfs.sh $nproc"; return 0; }
expect_network() { case $1 in socket) echo Socket ;; netib-*) echo IB ;; *) echo RoCE ;; esac; }
expect_gdr() { case $1 in gdr-* | netib-gdr) echo yes ;; *) echo no ;; esac; }

status=0
run_logged() {  # name, command...: runs it, keeps stdout+stderr in $out/name.log
  local name=$1; shift
  echo "=== $name: $*"
  ((dry_run)) && return 0
  if "$@" >"$out/$name.log" 2>&1; then
    echo "    passed ($(grep -E '^verdict|Avg bus|p50' "$out/$name.log" | head -n1))"
  else
    echo "    FAILED (exit $?): last lines of $out/$name.log:"
    tail -n 15 "$out/$name.log" | sed 's/^/      /'
    status=1
  fi
}

((dry_run)) || {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "host: $(uname -r), $(grep -m1 PRETTY_NAME /etc/os-release | cut -d= -f2 | tr -d '"')"
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", ".".join(map(str, torch.cuda.nccl.version())))'
  echo "plugin: $plugin"; ldd "$plugin" | sed 's/^/  /'
} | tee "$out/environment.txt"

traced_steps=()  # the torchrun steps, whose profiler traces the summary counts
collectives() {  # mode
  [[ $1 == gdr-downgrade ]] && { collectives_downgrade; return; }
  traced_steps+=("collectives-$1")
  # shellcheck disable=SC2046  # mode_env prints NAME=value words, none with spaces
  run_logged "collectives-$1" env $(mode_env "$1") NCCL_DEBUG_FILE="$out/nccl-logs/collectives-$1.%h.%p.log" \
    NCCL_PROFILE_DUMP_FILE="$out/profiler/collectives-$1" $(mode_wrapper "$1") \
    torchrun --standalone --nproc-per-node "$nproc" "$repo/tools/gpu-validate/collectives.py" \
    --max-bytes "$max_bytes" --iters "$iters" --expect-network "$(expect_network "$1")" \
    --expect-gdr "$(expect_gdr "$1")" --json "$out/collectives-$1.json" ${ops:+--ops "$ops"}
}
# The downgrade must fail, with the plugin's message naming it: the step passes when it does.
collectives_downgrade() {
  local name=collectives-gdr-downgrade
  echo "=== $name: must fail with the plugin's GPUDirect downgrade error"
  ((dry_run)) && return 0
  # shellcheck disable=SC2046
  if env $(mode_env gdr-downgrade) NCCL_DEBUG_FILE="$out/nccl-logs/$name.%h.%p.log" \
    torchrun --standalone --nproc-per-node "$nproc" "$repo/tools/gpu-validate/collectives.py" \
    --max-bytes 1M --iters 1 --timeout 60 --expect-network RoCE ${ops:+--ops "$ops"} \
    >"$out/$name.log" 2>&1; then
    echo "    FAILED: the run passed; NCCL_ROCE_REQUIRE_GDR=1 let the host staging through"
    status=1
  elif grep -h 'GPUDirect RDMA downgrade' "$out"/nccl-logs/"$name".*.log >"$out/$name.warn"; then
    echo "    passed (refused: $(head -c 300 "$out/$name.warn")...)"
  else
    echo "    FAILED: the run failed without the plugin's downgrade error; last lines:"
    tail -n 15 "$out/$name.log" | sed 's/^/      /'
    status=1
  fi
}

tp_allreduce() {  # mode
  traced_steps+=("tp-allreduce-$1")
  local bounded=()
  vroce_copies_in_process "$1" && bounded=(--sync-every 32)  # see the header: a bounded launch queue
  # shellcheck disable=SC2046
  run_logged "tp-allreduce-$1" env $(mode_env "$1") NCCL_DEBUG_FILE="$out/nccl-logs/tp-$1.%h.%p.log" \
    NCCL_PROFILE_DUMP_FILE="$out/profiler/tp-allreduce-$1" $(mode_wrapper "$1") \
    torchrun --standalone --nproc-per-node "$nproc" "$repo/examples/tp_allreduce.py" \
    --iters 2000 "${bounded[@]}" --expect-network "$(expect_network "$1")"
}
all_reduce_perf() {  # mode
  [[ -n $nccl_tests ]] || return 0
  local perf=$nccl_tests/all_reduce_perf devices="" r
  [[ $dry_run == 1 || -x $perf ]] || fail "$perf is missing or not executable"
  if ((share_gpu)); then
    all_reduce_perf_per_process "$1"
    return
  fi
  for ((r = 0; r < nproc; r++)); do devices+="${devices:+,}vroce$r=127.0.0.$((21 + r))"; done
  # shellcheck disable=SC2046
  run_logged "all_reduce_perf-$1" env $(mode_env "$1") VROCE_DEVICES="$devices" \
    NCCL_DEBUG_FILE="$out/nccl-logs/perf-$1.%h.%p.log" LD_LIBRARY_PATH="$nccl_lib_dir:${LD_LIBRARY_PATH:-}" \
    "$perf" -g "$nproc" -b 8 -e "$max_bytes" -f 2 -c 1 -n "$perf_iters" -w 1
}

# One process per rank on the shared GPU, as on a cluster: an MPI launcher starts them, and
# rank_identity.sh gives each its host name and vroce device. nccl-tests has no multi-process mode
# of its own (its processes find each other through MPI), so without mpirun the step cannot run.
all_reduce_perf_per_process() {  # mode
  if ! command -v mpirun >/dev/null; then
    echo "=== all_reduce_perf-$1: skipped: --share-gpu runs one process per rank, which nccl-tests"
    echo "    starts only through MPI, and mpirun is not on PATH (install Open MPI and build"
    echo "    all_reduce_perf with MPI=1)"
    return 0
  fi
  # Open MPI's own traffic over TCP on loopback: its verbs and UCX paths would open vroce.
  # shellcheck disable=SC2046
  run_logged "all_reduce_perf-$1" env $(mode_env "$1") NCCL_DEBUG_FILE="$out/nccl-logs/perf-$1.%h.%p.log" \
    LD_LIBRARY_PATH="$nccl_lib_dir:${LD_LIBRARY_PATH:-}" \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$nproc" \
    --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
    "$repo/tools/gpu-validate/rank_identity.sh" "$perf" -g 1 -b 8 -e "$max_bytes" -f 2 -c 1 -n "$perf_iters" -w 1
}
side_by_side() {  # mode
  [[ -n $sweep ]] || fail "step side_by_side needs --sweep (nccl_allreduce_sweep built for this node)"
  [[ $1 == gdr-dmabuf || $1 == host ]] || fail "side_by_side takes the modes gdr-dmabuf and host"
  local args=(--sweep "$sweep" --build "$build" --modes "$1" --ranks "$sbs_ranks" --rounds "$rounds"
              --out "$out/side-by-side-$1" --record "$out/side-by-side-$1.json")
  [[ -n $netib ]] && args+=(--netib "$netib")
  [[ -n $nccl_lib_dir ]] && args+=(--nccl-lib "$nccl_lib_dir")
  echo "=== side-by-side-$1: tools/gpu-validate/side_by_side.py ${args[*]}"
  if ((dry_run)); then
    python3 "$repo/tools/gpu-validate/side_by_side.py" "${args[@]}" --dry-run
  elif python3 "$repo/tools/gpu-validate/side_by_side.py" "${args[@]}" >"$out/side-by-side-$1.log" 2>&1; then
    echo "    passed ($(grep -m1 '^# slower' "$out/side-by-side-$1.log"))"
  else
    echo "    FAILED: last lines of $out/side-by-side-$1.log:"
    tail -n 15 "$out/side-by-side-$1.log" | sed 's/^/      /'
    status=1
  fi
}

# The most telling runs first, so a run cut short by a time limit still says the most.
((dry_run)) || mkdir -p "$out/nccl-logs" "$out/profiler"
for step in ${steps//,/ }; do
  mode=${step#*:}
  case $mode in gdr-dmabuf | gdr-pointer | gdr-downgrade | host | socket) ;;
    netib-gdr | netib-host) [[ -n $netib ]] || fail "step $step needs --netib (net_ib as a plugin)" ;;
    *) fail "unknown mode in step $step (see --help)" ;;
  esac
  case ${step%%:*} in
    collectives) collectives "$mode" ;;
    tp_allreduce) tp_allreduce "$mode" ;;
    all_reduce_perf) all_reduce_perf "$mode" ;;
    side_by_side) side_by_side "$mode" ;;
    *) fail "unknown step $step (see --help)" ;;
  esac
done
((dry_run)) && exit 0

python3 "$repo/tools/gpu-validate/summarize.py" "$out" | tee "$out/summary.md"
python3 "$repo/tools/gpu-validate/record.py" "$out" && echo "record: $out/record.json"
# Which ncclNet table NCCL loaded from the plugin, per step: the proof of which ABI a release uses.
{
  echo
  echo "ncclNet tables NCCL loaded (NCCL's 'Loaded net plugin' lines, per step):"
  for log in "$out"/nccl-logs/*.log; do
    [[ -f $log ]] || continue
    step_name=$(basename "$log")
    grep -ho 'Loaded net plugin [^ ]* (v[0-9]*)' "$log" | head -n1 | sed "s|^|  ${step_name%%.*}: |"
  done | sort -u
} | tee -a "$out/summary.md"
if [[ -n $profiler ]]; then
  # The example profiler writes Chrome trace JSON, one "NET_IB" begin record per QP event the
  # network plugin reported (net_ib's v1 descriptor: device, qp_num, opcode, wr_id, size).
  {
    echo
    echo "NCCL profiler ($profiler): the plugin's QP events per step"
    for traced in "${traced_steps[@]}"; do
      # NCCL 2.28's example names them STEP_<comm hash>_<rank>.json (its README: STEP-host-tid.txt).
      qp_events=$(cat "$out/profiler/$traced"[-_]* 2>/dev/null | grep -c '"cat": "NET_IB", "ph": "b"' || true)
      echo "  $traced: $qp_events QP events"
    done
  } | tee -a "$out/summary.md"
fi
tar -C "$out" -czf "$out/nccl-logs.tgz" nccl-logs && rm -rf "$out/nccl-logs"
((status == 0)) || echo "gpu-validate.sh: some runs FAILED; logs in $out" >&2
exit $status
