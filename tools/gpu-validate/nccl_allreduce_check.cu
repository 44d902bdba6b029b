// nccl_allreduce_check: an all-reduce through NCCL's C API alone, no PyTorch, for checking the
// plugin under an NCCL release that PyTorch cannot load (an old one, or one built with only some
// collectives). Its ranks are processes forked on GPU 0 (forked_ranks.h: each names its own host
// and gets its own vroce device, so NCCL connects them through the network plugin).
//
// Every size from 8 B to MAX_BYTES (x4) is summed ITERS times and every element checked; the
// last line says PASS or FAIL with the wrong-element count. Build on the GPU node:
//   nvcc -O2 -o nccl_allreduce_check nccl_allreduce_check.cu -I<nccl>/include -L<nccl>/lib -lnccl
// Usage: nccl_allreduce_check NRANKS [MAX_BYTES [ITERS]]
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "forked_ranks.h"

namespace {

// Small integers, so sums over a few ranks are exact in float.
__global__ void fill(float* data, size_t count, int rank, int iter) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    data[i] = static_cast<float>((i + rank + iter) % 7);
  }
}

__global__ void count_wrong(const float* data, size_t count, int nranks, int iter,
                            unsigned long long* wrong) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    float expected = 0;
    for (int r = 0; r < nranks; ++r) {
      expected += static_cast<float>((i + r + iter) % 7);
    }
    if (data[i] != expected) {
      atomicAdd(wrong, 1ULL);
    }
  }
}

int run_rank(int rank, int nranks, size_t max_bytes, int iters, const std::string& id_file) {
  ncclUniqueId id;
  if (!forked_ranks::exchange_unique_id(rank, id_file, &id)) {
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(0));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  float* data = nullptr;
  unsigned long long* wrong = nullptr;
  CHECK_CUDA(cudaMalloc(&data, max_bytes));
  CHECK_CUDA(cudaMalloc(&wrong, sizeof(*wrong)));
  unsigned long long total_wrong = 0;
  for (size_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    CHECK_CUDA(cudaMemsetAsync(wrong, 0, sizeof(*wrong), stream));
    const auto start = std::chrono::steady_clock::now();
    for (int iter = 0; iter < iters; ++iter) {
      fill<<<64, 256, 0, stream>>>(data, count, rank, iter);
      CHECK_NCCL(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm, stream));
      count_wrong<<<64, 256, 0, stream>>>(data, count, nranks, iter, wrong);
    }
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count() /
        iters;
    unsigned long long host_wrong = 0;
    CHECK_CUDA(cudaMemcpy(&host_wrong, wrong, sizeof(host_wrong), cudaMemcpyDeviceToHost));
    total_wrong += host_wrong;
    if (rank == 0) {
      std::printf("%12zu B  %10.1f us/iter (incl. fill and check)  wrong %llu\n", bytes, us,
                  host_wrong);
    }
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  cudaFree(data);
  cudaFree(wrong);
  if (total_wrong != 0) {
    std::fprintf(stderr, "rank %d: %llu wrong elements\n", rank, total_wrong);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s NRANKS [MAX_BYTES [ITERS]]\n", argv[0]);
    return 2;
  }
  const int nranks = std::atoi(argv[1]);
  const size_t max_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : (size_t{16} << 20);
  const int iters = argc > 3 ? std::atoi(argv[3]) : 5;
  if (nranks < 2 || max_bytes < 8 || iters < 1) {
    std::fprintf(stderr, "NRANKS >= 2, MAX_BYTES >= 8 and ITERS >= 1, please\n");
    return 2;
  }
  int version = 0;
  ncclGetVersion(&version);
  std::printf("NCCL %d, %d ranks on GPU 0, 8 B .. %zu B, %d iterations\n", version, nranks,
              max_bytes, iters);
  std::fflush(stdout);
  const int failed = forked_ranks::run(nranks, "nccl-allreduce-check", [&](int rank, const std::string& id_file) {
    return run_rank(rank, nranks, max_bytes, iters, id_file);
  });
  std::printf(failed == 0 ? "PASS\n" : "FAIL: %d rank(s) failed\n", failed);
  return failed == 0 ? 0 : 1;
}
