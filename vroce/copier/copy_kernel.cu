// The copy kernel: vroce's small copies to and from CUDA memory, made on the GPU by a kernel that
// the copy helper (main.cpp) keeps running while copies come, reading its requests from host
// memory (gpu/copy_kernel_mailbox.h). Built by nvcc into a fatbin that the helper carries.
//
// One block: warp 0 polls the request line, one chunk per lane, so that a poll costs one PCIe
// round trip; then all threads copy, and the answer goes back in the reply line. Loads of
// device memory bypass L1 (__ldcg): the application's kernels of another context write those
// bytes between requests, and a line this SM read before must not be served from L1.
#include <cstdint>

#include "gpu/copy_kernel_mailbox.h"

using namespace vroce::gpu::copier;

namespace {

constexpr unsigned kThreads = 256;
// The stop word is read once per this many polls: reading it every time would add a second
// round trip to each.
constexpr unsigned kPollsPerStopCheck = 64;

__device__ __forceinline__ uint4 load_chunk(const MailboxLine* line, unsigned chunk) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(&line->words[chunk * kChunkWords])
               : "memory");
  return v;
}

__device__ __forceinline__ void store_chunk(MailboxLine* line, unsigned chunk, uint4 v) {
  asm volatile(
      "st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(&line->words[chunk * kChunkWords]),
      "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
      : "memory");
}

__device__ __forceinline__ uint8_t* chunk_bytes(uint4* chunk) {
  return reinterpret_cast<uint8_t*>(&chunk->y);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads)
    vroce_copy_kernel(KernelMailbox* box, uint8_t* staging, uint32_t seen) {
  __shared__ uint4 request[kLineChunks];
  __shared__ uint4 reply[kLineChunks];
  __shared__ int serving;
  for (;;) {
    if (threadIdx.x < 32) {
      const unsigned lane = threadIdx.x;
      const uint32_t want = seen + 1;
      for (unsigned polls = 1;; ++polls) {
        const uint4 chunk = load_chunk(&box->request, lane % kLineChunks);
        const unsigned stop = lane == 0 && polls % kPollsPerStopCheck == 0
                                  ? *static_cast<volatile uint32_t*>(&box->stop)
                                  : 0;
        if (__all_sync(0xffffffffU, chunk.x == want)) {
          if (lane < kLineChunks) {
            request[lane] = chunk;
          }
          if (lane == 0) {
            serving = 1;
          }
          break;
        }
        if (__shfl_sync(0xffffffffU, stop, 0) != 0) {
          if (lane == 0) {
            serving = 0;
          }
          break;
        }
      }
    }
    __syncthreads();
    if (serving == 0) {
      return;
    }
    seen = request[0].x;
    const uint32_t op = request[0].y;
    const uint32_t length = request[0].z;
    uint8_t* device =
        reinterpret_cast<uint8_t*>(uint64_t{request[1].y} | (uint64_t{request[1].z} << 32));
    const unsigned t = threadIdx.x;
    if (t < kLineChunks) {
      reply[t] = make_uint4(seen, 0, 0, 0);
    }
    __syncthreads();
    if (length <= kInlineBytes) {
      if (t < length) {
        uint4* chunk =
            (op == kKernelToDevice ? request : reply) + kFirstDataChunk + t / kDataBytesPerChunk;
        uint8_t* byte = chunk_bytes(chunk) + t % kDataBytesPerChunk;
        if (op == kKernelToDevice) {
          __stcg(device + t, *byte);
        } else {
          *byte = __ldcg(device + t);
        }
      }
    } else if (((reinterpret_cast<uintptr_t>(device) | length) & 15) == 0) {
      for (uint32_t i = t * 16; i < length; i += kThreads * 16) {
        auto* d = reinterpret_cast<uint4*>(device + i);
        auto* s = reinterpret_cast<uint4*>(staging + i);
        if (op == kKernelToDevice) {
          __stcg(d, __ldcv(s));
        } else {
          __stcg(s, __ldcg(d));
        }
      }
    } else {
      for (uint32_t i = t; i < length; i += kThreads) {
        if (op == kKernelToDevice) {
          __stcg(device + i, __ldcv(staging + i));
        } else {
          __stcg(staging + i, __ldcg(device + i));
        }
      }
    }
    // What must be visible before the answer: device memory written, to the application's
    // kernels (a fence at GPU scope: they run on this GPU); the staging buffer written, to the
    // CPU (a fence at system scope, the dearer one). An inline copy from the device needs
    // neither: its bytes travel in the answer's own chunks.
    if (op == kKernelToDevice) {
      __threadfence();
    } else if (length > kInlineBytes) {
      __threadfence_system();
    }
    __syncthreads();
    if (t < reply_chunks(op, length)) {
      store_chunk(&box->reply, t, reply[t]);
    }
    __syncthreads();  // request[] and reply[] are rewritten by the next round
  }
}
