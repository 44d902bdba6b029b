#!/usr/bin/env bash
# rank_identity.sh CMD...: what one rank launched by an MPI launcher (or Slurm) needs before NCCL
# starts on a machine whose ranks share one GPU: its own host name (NCCL_HOSTID, so NCCL connects
# the ranks through the network plugin rather than refusing a duplicate GPU) and, where
# ROCE_EXAMPLE_VROCE_BASE is set, its own vroce device (127.0.0.21 + rank, as forked_ranks.h and
# tp_allreduce.py give them). Then it execs CMD. gpu-validate.sh runs nccl-tests' all_reduce_perf
# through it, one process per rank, under mpirun.
set -euo pipefail
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
if [[ -z $rank ]]; then
  echo "rank_identity.sh: no rank in the environment (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID): run it under mpirun or srun" >&2
  exit 2
fi
export NCCL_HOSTID="${HOSTNAME:-host}-rank$rank"
# nccl-tests picks its GPU by the rank's index among the processes of its host name (the real
# one, not NCCL_HOSTID), so rank 1 would ask for a second GPU; the ranks share GPU 0.
export NCCL_TESTS_DEVICE=${NCCL_TESTS_DEVICE:-0}
if [[ -n ${ROCE_EXAMPLE_VROCE_BASE:-} ]]; then
  base=$ROCE_EXAMPLE_VROCE_BASE
  export VROCE_DEVICES="vroce$rank=${base%.*}.$((${base##*.} + rank))"
fi
exec "$@"
