// forked_ranks.h: what the NCCL C API programs here share: NRANKS processes forked on GPU 0, each
// naming its own host (NCCL_HOSTID) so that NCCL connects them through the network plugin rather
// than through shared memory, each with its own vroce device when ROCE_EXAMPLE_VROCE_BASE is set
// (127.0.0.21, .22, ..., as tp_allreduce.py's per_rank_vroce_device gives them), and the
// communicator's unique id passed from rank 0 to the others through a file.
// With ROCE_EXAMPLE_VROCE_MEMBERS=M (1 to 4) each rank has M vroce devices instead, the M
// functions of one PCI device (VROCE_PCI_FUNCTIONS): a multi-port NIC that NCCL fuses into one
// virtual NIC at its default NCCL_NET_MERGE_LEVEL. Device k of rank r is vroce<M*r+k> at
// base + M*r + k, the names and addresses in_vroce_sysfs.sh writes for M*NRANKS devices.
// With ROCE_EXAMPLE_PORT_EVENTS_RANK=R, only rank R keeps VROCE_PORT_EVENTS (the others' vroce
// would refuse a schedule naming devices they lack): a link change inside one rank's NIC, as
// VROCE_PORT_EVENTS="vroce1:down@5000,vroce1:up@15000" takes rank 0's second member down.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

// In a rank's function returning int: a failed CUDA or NCCL call prints the rank (a variable named
// `rank` where the macro is used), the call and the library's reason, and returns 1.
#define CHECK_CUDA(call)                                                             \
  do {                                                                               \
    const cudaError_t e = (call);                                                    \
    if (e != cudaSuccess) {                                                          \
      std::fprintf(stderr, "rank %d: %s: %s\n", rank, #call, cudaGetErrorString(e)); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)
#define CHECK_NCCL(call)                                                             \
  do {                                                                               \
    const ncclResult_t r = (call);                                                   \
    if (r != ncclSuccess) {                                                          \
      std::fprintf(stderr, "rank %d: %s: %s\n", rank, #call, ncclGetErrorString(r)); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

namespace forked_ranks {

// Before NCCL starts in this rank's process: its host name and its vroce device.
inline void set_rank_identity(const char* program, int rank) {
  const std::string host = std::string(program) + "-rank-" + std::to_string(rank);
  setenv("NCCL_HOSTID", host.c_str(), 1);
  if (const char* base = std::getenv("ROCE_EXAMPLE_VROCE_BASE")) {
    const std::string text(base);
    const std::string prefix = text.substr(0, text.rfind('.') + 1);
    const int first = std::atoi(text.substr(prefix.size()).c_str());
    const char* members_text = std::getenv("ROCE_EXAMPLE_VROCE_MEMBERS");
    const int asked = members_text != nullptr ? std::atoi(members_text) : 1;
    const int members = asked >= 1 && asked <= 4 ? asked : 1;
    std::string devices;
    std::string functions;
    for (int k = 0; k < members; ++k) {
      const int index = members * rank + k;
      const std::string name = "vroce" + std::to_string(index);
      devices += (k == 0 ? "" : ",") + name + "=" + prefix + std::to_string(first + index);
      functions += (k == 0 ? "" : "+") + name;
    }
    setenv("VROCE_DEVICES", devices.c_str(), 1);
    if (members > 1) {
      setenv("VROCE_PCI_FUNCTIONS", functions.c_str(), 1);
    }
    if (const char* events_rank = std::getenv("ROCE_EXAMPLE_PORT_EVENTS_RANK");
        events_rank != nullptr && std::atoi(events_rank) != rank) {
      unsetenv("VROCE_PORT_EVENTS");
    }
  }
}

// Rank 0 creates the id and publishes it (write, then rename, so no rank reads half of it);
// the others wait up to a minute for it. False, with a message, when that fails.
inline bool exchange_unique_id(int rank, const std::string& id_file, ncclUniqueId* id) {
  if (rank == 0) {
    const ncclResult_t r = ncclGetUniqueId(id);
    if (r != ncclSuccess) {
      std::fprintf(stderr, "rank 0: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
      return false;
    }
    const std::string partial = id_file + ".partial";
    std::ofstream(partial, std::ios::binary).write(id->internal, sizeof(id->internal));
    return std::rename(partial.c_str(), id_file.c_str()) == 0;
  }
  for (int tries = 0; tries <= 600; ++tries) {
    std::ifstream in(id_file, std::ios::binary);
    if (in.read(id->internal, sizeof(id->internal))) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "rank %d: no unique id from rank 0 in 60 s\n", rank);
  return false;
}

// Forks nranks processes running rank_main(rank, id_file) and waits for all of them. Returns
// how many failed (a non-zero exit or a signal).
inline int run(int nranks, const char* program,
               const std::function<int(int, const std::string&)>& rank_main) {
  const std::string id_file =
      "/tmp/" + std::string(program) + "-" + std::to_string(getpid()) + ".id";
  std::vector<pid_t> children;
  for (int rank = 0; rank < nranks; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      set_rank_identity(program, rank);
      const int rc = rank_main(rank, id_file);
      std::fflush(nullptr);  // _exit skips stdio's buffers: a rank's printed lines would be lost
      _exit(rc);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (const pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::remove(id_file.c_str());
  return failed;
}

}  // namespace forked_ranks
