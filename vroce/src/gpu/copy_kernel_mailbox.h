// The copy kernel's mailbox: how vroce hands a small copy straight to a kernel that its copy
// helper keeps running on the GPU (vroce/copier/copy_kernel.cu), with no CPU thread of the helper
// and no CUDA driver call between the request and the copy. It lives in the helper's channel
// (gpu/copier_protocol.h), in host memory that the GPU reads and writes over PCIe.
//
// Why lines of sequence-stamped chunks: a GPU read of host memory is a PCIe round trip of about
// a microsecond, and a kernel that read a request word by word, after a flag, spent 7 us per copy
// on an H200 (a driver copy costs 6). Here a request is one line of eight 16-byte chunks, each
// starting with the request's sequence number; the kernel reads all eight at once, one per lane
// of a warp, and has the request when every chunk carries the number it waits for. The answer
// comes back the same way. Each chunk is written and read as one 16-byte access, so a chunk is
// never half old, half new; a line may be, which is what the number in every chunk detects.
// Measured on an H200: about 3 us per 8-byte copy either way (docs/benchmarks-log.md).
//
// Shared by host code and by the CUDA kernel, so plain integers only, and the CPU's side of the
// chunk accesses apart from nvcc's view.
#pragma once

#include <cstddef>
#include <cstdint>
#ifndef __CUDACC__
#include <emmintrin.h>
#endif

namespace vroce::gpu::copier {

inline constexpr uint32_t kChunkWords = 4;  // 16 bytes
inline constexpr uint32_t kLineChunks = 8;
// Request chunk 0 is {sequence, op, length, 0}, chunk 1 {sequence, address low, address high, 0};
// chunks 2-7 are {sequence, 12 bytes of data}. The answer's chunk 0 is {sequence, 0, 0, 0} and,
// for an inline copy from the device, chunks 2-7 carry its data the same way.
inline constexpr uint32_t kFirstDataChunk = 2;
inline constexpr uint32_t kDataBytesPerChunk = 12;
// Copies up to this size travel inside the line; larger ones go through the channel's staging
// buffer (the answer then says only that the staging buffer is written or read).
inline constexpr uint32_t kInlineBytes = (kLineChunks - kFirstDataChunk) * kDataBytesPerChunk;

enum KernelOp : uint32_t {
  kKernelToDevice = 1,
  kKernelFromDevice = 2,
};

struct alignas(128) MailboxLine {
  uint32_t words[kLineChunks * kChunkWords];
};

struct KernelMailbox {
  MailboxLine request;  // written by vroce, polled by the kernel
  MailboxLine reply;    // written by the kernel, polled by vroce
  uint32_t stop;        // set by the helper to end the kernel
};

// How many of the answer's chunks a copy of `length` bytes in direction `op` needs.
constexpr uint32_t reply_chunks(uint32_t op, uint32_t length) {
  return op == kKernelFromDevice && length <= kInlineBytes
             ? kFirstDataChunk + (length + kDataBytesPerChunk - 1) / kDataBytesPerChunk
             : 1;
}

#ifndef __CUDACC__
// The CPU's side: one chunk, written or read with one 16-byte access.
struct Chunk {
  uint32_t words[kChunkWords];
};

inline void store_chunk(MailboxLine& line, uint32_t index, const Chunk& chunk) {
  _mm_store_si128(reinterpret_cast<__m128i*>(&line.words[size_t{index} * kChunkWords]),
                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(chunk.words)));
}

inline Chunk load_chunk(const MailboxLine& line, uint32_t index) {
  Chunk chunk;
  asm volatile("" ::: "memory");  // a fresh read on every call: the other side writes the line
  _mm_storeu_si128(
      reinterpret_cast<__m128i*>(chunk.words),
      _mm_load_si128(reinterpret_cast<const __m128i*>(&line.words[size_t{index} * kChunkWords])));
  return chunk;
}
#endif

}  // namespace vroce::gpu::copier
