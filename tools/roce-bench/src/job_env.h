// The rank and size of a job of several nodes, from the launcher's environment as nccl-tests
// users expect it: torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Open MPI
// (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) or Slurm (SLURM_PROCID, SLURM_NTASKS). Pure: the
// environment comes in as a map, so every precedence rule and error is unit-tested.
//
// Precedence: an explicit --rank wins and no variable is read. Otherwise the innermost launcher
// wins: torchrun, then Open MPI, then Slurm (mpirun or torchrun inside a Slurm allocation keeps
// the allocation's SLURM_PROCID, the same on every process). A launcher whose variables are only
// partly set is an error naming the missing one. A job of size 1 (srun -n 1, a batch script's
// own shell) is no job: roce-bench then starts its ranks here as without any of them.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "roce/result.h"

namespace roce::bench {

using EnvMap = std::map<std::string, std::string>;

struct JobEnv {
  int rank = 0;
  int size = 0;
  // host:port where rank 0 listens, from MASTER_ADDR and MASTER_PORT; empty when they are unset
  // (--rendezvous must then say it).
  std::string rendezvous;
  // Where rank and size came from, for the header: "torchrun (RANK/WORLD_SIZE)".
  std::string source;
};

// nullopt: no launcher's variables (or a job of size 1). An error names the variables to set or
// unset. Rank and size are checked (integers, 0 <= rank < size <= max_ranks).
Result<std::optional<JobEnv>> job_from_environment(const EnvMap& env, int max_ranks);

// The process environment as an EnvMap.
EnvMap process_environment();

}  // namespace roce::bench
