// nccl_allreduce_sweep: the timed all-reduce sweep that gpu-validate.sh's side-by-side step runs
// once per network transport (this plugin, NCCL's built-in IB, net_ib as a plugin), through NCCL's
// C API so that a run costs a process start and a communicator, not a Python interpreter per rank.
// Its ranks are processes forked on GPU 0 (forked_ranks.h).
//
// Cells: float32 sums from --min-bytes to --max-bytes (x --factor, the largest always included),
// and the tensor-parallel case of the seed article, a 16x8192 fp16 all-reduce (256 KiB). Per cell:
// --warmup untimed all-reduces, then timed ones (--iters up to 1 MiB, fewer above so that a cell
// moves about --iters MiB, at least 5) between two CUDA events; the cell's time is the slowest
// rank's mean. Then one more all-reduce of known data, every element checked; the cell's wrong
// count is the sum over ranks. Rank 0 prints a table and, with --json, writes every cell.
//
// Build (a CUDA toolkit and NCCL's headers; at run time the libnccl.so.2 on the library path):
//   nvcc -O2 -arch=sm_90 -o nccl_allreduce_sweep nccl_allreduce_sweep.cu -I<nccl>/include -L<nccl>/lib -lnccl
// Usage: nccl_allreduce_sweep --ranks N [--min-bytes B] [--max-bytes B] [--factor F] [--iters N]
//                             [--warmup N] [--json FILE]   (sizes take K, M and G suffixes)
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "forked_ranks.h"

namespace {

struct Options {
  int ranks = 0;
  size_t min_bytes = 8;
  size_t max_bytes = size_t{64} << 20;
  size_t factor = 4;
  int iters = 50;
  int warmup = 5;
  std::string json;
};

struct Cell {
  std::string name;
  size_t bytes;
  bool half;  // fp16 elements, else float32
  int iters;
};

// Small integers, so that sums over up to 8 ranks are exact in fp16 and in float.
template <typename T>
__global__ void fill(T* data, size_t count, int rank) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    data[i] = static_cast<T>(static_cast<float>((i + rank) % 7));
  }
}

template <typename T>
__global__ void count_wrong(const T* data, size_t count, int nranks, unsigned long long* wrong) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    float expected = 0;
    for (int r = 0; r < nranks; ++r) {
      expected += static_cast<float>((i + r) % 7);
    }
    if (static_cast<float>(data[i]) != expected) {
      atomicAdd(wrong, 1ULL);
    }
  }
}

std::vector<Cell> cells_of(const Options& o) {
  std::vector<Cell> cells;
  const auto iters_for = [&](size_t bytes) {
    const size_t mib = size_t{1} << 20;
    const size_t scaled = bytes <= mib ? o.iters : o.iters * mib / bytes;
    return static_cast<int>(std::max<size_t>(scaled, 5));
  };
  for (size_t bytes = o.min_bytes;; bytes *= o.factor) {
    const size_t b = std::min(bytes, o.max_bytes);
    cells.push_back({std::to_string(b), b, false, iters_for(b)});
    if (b >= o.max_bytes) {
      break;
    }
  }
  const size_t tp_bytes = size_t{16} * 8192 * sizeof(__half);
  cells.push_back({"tp16x8192_fp16", tp_bytes, true, iters_for(tp_bytes)});
  return cells;
}

int run_rank(int rank, const Options& o, const std::string& id_file) {
  ncclUniqueId id;
  if (!forked_ranks::exchange_unique_id(rank, id_file, &id)) {
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(0));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, o.ranks, id, rank));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t begin, end;
  CHECK_CUDA(cudaEventCreate(&begin));
  CHECK_CUDA(cudaEventCreate(&end));
  const std::vector<Cell> cells = cells_of(o);
  size_t largest = 0;
  for (const Cell& c : cells) {
    largest = std::max(largest, c.bytes);
  }
  void* data = nullptr;
  double* time_us = nullptr;                // per cell: this rank's mean, then the slowest rank's
  unsigned long long* wrong = nullptr;      // per cell: this rank's, then the sum over ranks
  CHECK_CUDA(cudaMalloc(&data, largest));
  CHECK_CUDA(cudaMallocManaged(&time_us, cells.size() * sizeof(double)));
  CHECK_CUDA(cudaMallocManaged(&wrong, cells.size() * sizeof(unsigned long long)));
  CHECK_CUDA(cudaMemset(wrong, 0, cells.size() * sizeof(unsigned long long)));
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    const ncclDataType_t type = c.half ? ncclHalf : ncclFloat;
    const size_t count = c.bytes / (c.half ? sizeof(__half) : sizeof(float));
    for (int w = 0; w < o.warmup; ++w) {
      CHECK_NCCL(ncclAllReduce(data, data, count, type, ncclSum, comm, stream));
    }
    CHECK_CUDA(cudaEventRecord(begin, stream));
    for (int it = 0; it < c.iters; ++it) {
      CHECK_NCCL(ncclAllReduce(data, data, count, type, ncclSum, comm, stream));
    }
    CHECK_CUDA(cudaEventRecord(end, stream));
    CHECK_CUDA(cudaEventSynchronize(end));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, begin, end));
    time_us[i] = 1000.0 * ms / c.iters;
    if (c.half) {
      fill<<<64, 256, 0, stream>>>(static_cast<__half*>(data), count, rank);
    } else {
      fill<<<64, 256, 0, stream>>>(static_cast<float*>(data), count, rank);
    }
    CHECK_NCCL(ncclAllReduce(data, data, count, type, ncclSum, comm, stream));
    if (c.half) {
      count_wrong<<<64, 256, 0, stream>>>(static_cast<__half*>(data), count, o.ranks, &wrong[i]);
    } else {
      count_wrong<<<64, 256, 0, stream>>>(static_cast<float*>(data), count, o.ranks, &wrong[i]);
    }
  }
  CHECK_NCCL(ncclAllReduce(time_us, time_us, cells.size(), ncclDouble, ncclMax, comm, stream));
  CHECK_NCCL(ncclAllReduce(wrong, wrong, cells.size(), ncclUint64, ncclSum, comm, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  unsigned long long total_wrong = 0;
  if (rank == 0) {
    int version = 0;
    ncclGetVersion(&version);
    std::printf("# NCCL %d, %d ranks on GPU 0; time: the slowest rank's mean per all-reduce\n",
                version, o.ranks);
    std::printf("%-16s %12s %7s %12s %10s %8s\n", "cell", "bytes", "iters", "time_us",
                "busbw_GBs", "wrong");
  }
  std::string rows;  // the cells as JSON objects
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    // Bus bandwidth as nccl-tests defines it for all-reduce: 2(n-1)/n of the algorithm's.
    const double busbw = c.bytes / (time_us[i] * 1e3) * 2.0 * (o.ranks - 1) / o.ranks;
    total_wrong += wrong[i];
    if (rank == 0) {
      std::printf("%-16s %12zu %7d %12.2f %10.3f %8llu\n", c.name.c_str(), c.bytes, c.iters,
                  time_us[i], busbw, wrong[i]);
      char row[256];
      std::snprintf(row, sizeof(row),
                    "%s{\"name\": \"%s\", \"bytes\": %zu, \"dtype\": \"%s\", \"iters\": %d, "
                    "\"time_us\": %.3f, \"busbw_gbs\": %.4f, \"wrong\": %llu}",
                    i == 0 ? "" : ", ", c.name.c_str(), c.bytes, c.half ? "float16" : "float32",
                    c.iters, time_us[i], busbw, wrong[i]);
      rows += row;
    }
  }
  if (rank == 0 && !o.json.empty()) {
    int version = 0;
    ncclGetVersion(&version);
    const std::string json = "{\"nccl_version\": " + std::to_string(version) +
                             ", \"ranks\": " + std::to_string(o.ranks) + ", \"cells\": [" + rows +
                             "]}\n";
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (f == nullptr || std::fputs(json.c_str(), f) < 0 || std::fclose(f) != 0) {
      std::fprintf(stderr, "rank 0: cannot write %s\n", o.json.c_str());
      return 1;
    }
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  cudaFree(data);
  cudaFree(time_us);
  cudaFree(wrong);
  if (total_wrong != 0) {
    std::fprintf(stderr, "rank %d: %llu wrong elements in all\n", rank, total_wrong);
    return 1;
  }
  return 0;
}

// "64M" -> 67108864; 0 where the text is not a size.
size_t parse_size(const char* text) {
  char* rest = nullptr;
  const unsigned long long value = std::strtoull(text, &rest, 10);
  int shift = 0;
  if (*rest == 'K' || *rest == 'k') {
    shift = 10;
  } else if (*rest == 'M' || *rest == 'm') {
    shift = 20;
  } else if (*rest == 'G' || *rest == 'g') {
    shift = 30;
  } else if (*rest != '\0') {
    return 0;
  }
  if (shift != 0 && rest[1] != '\0') {
    return 0;
  }
  return static_cast<size_t>(value) << shift;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (value == nullptr) {
      std::fprintf(stderr, "%s needs a value\n", arg.c_str());
      return 2;
    }
    ++i;
    if (arg == "--ranks") {
      o.ranks = std::atoi(value);
    } else if (arg == "--min-bytes") {
      o.min_bytes = parse_size(value);
    } else if (arg == "--max-bytes") {
      o.max_bytes = parse_size(value);
    } else if (arg == "--factor") {
      o.factor = parse_size(value);
    } else if (arg == "--iters") {
      o.iters = std::atoi(value);
    } else if (arg == "--warmup") {
      o.warmup = std::atoi(value);
    } else if (arg == "--json") {
      o.json = value;
    } else {
      std::fprintf(stderr, "unknown argument %s (see the header of nccl_allreduce_sweep.cu)\n",
                   arg.c_str());
      return 2;
    }
  }
  if (o.ranks < 2 || o.min_bytes < 8 || o.max_bytes < o.min_bytes || o.factor < 2 ||
      o.iters < 1 || o.warmup < 0) {
    std::fprintf(stderr,
                 "needs --ranks >= 2, 8 <= --min-bytes <= --max-bytes, --factor >= 2, "
                 "--iters >= 1 and --warmup >= 0\n");
    return 2;
  }
  const int failed = forked_ranks::run(o.ranks, "nccl-allreduce-sweep",
                                       [&](int rank, const std::string& id_file) {
                                         return run_rank(rank, o, id_file);
                                       });
  std::printf(failed == 0 ? "PASS\n" : "FAIL: %d rank(s) failed\n", failed);
  return failed == 0 ? 0 : 1;
}
