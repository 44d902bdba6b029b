#include "core/ordered_copy.h"

#include <cstdint>
#include <cstring>

namespace vroce::core {
namespace {

// 16 bytes, any alignment, may alias anything: the unaligned vector type GCC's own SSE headers
// use, written with the generic vector extension so the loop also builds for aarch64. A typedef,
// not an alias declaration: clang applies aligned(1) to a typedef only, and with `using` kept
// the 16-byte alignment (UBSan reported every unaligned piece; -O2 may emit aligned moves).
typedef unsigned char Piece __attribute__((vector_size(16), aligned(1), may_alias));

// A compiler barrier after every store: without it GCC schedules the stores of one iteration in
// any order (it emitted +16 before +0) and turns the loop into a memcpy call (loop distribution
// recognises copy loops). It emits no instruction; loads are hoisted above the stores by hand.
inline void barrier() noexcept {
  asm volatile("" ::: "memory");
}

void copy_ascending(unsigned char* dst, const unsigned char* src, size_t n) noexcept {
  while (n >= 64) {
    const Piece a = *reinterpret_cast<const Piece*>(src);
    const Piece b = *reinterpret_cast<const Piece*>(src + 16);
    const Piece c = *reinterpret_cast<const Piece*>(src + 32);
    const Piece d = *reinterpret_cast<const Piece*>(src + 48);
    *reinterpret_cast<Piece*>(dst) = a;
    barrier();
    *reinterpret_cast<Piece*>(dst + 16) = b;
    barrier();
    *reinterpret_cast<Piece*>(dst + 32) = c;
    barrier();
    *reinterpret_cast<Piece*>(dst + 48) = d;
    barrier();
    dst += 64;
    src += 64;
    n -= 64;
  }
  while (n >= 16) {
    *reinterpret_cast<Piece*>(dst) = *reinterpret_cast<const Piece*>(src);
    barrier();
    dst += 16;
    src += 16;
    n -= 16;
  }
  if (n >= 8) {
    std::memcpy(dst, src, 8);  // one 8-byte move
    barrier();
    dst += 8;
    src += 8;
    n -= 8;
  }
  for (; n > 0; --n) {
    *dst++ = *src++;
    barrier();
  }
}

}  // namespace

void ordered_copy(void* dst, const void* src, size_t n) noexcept {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const auto begin = reinterpret_cast<uintptr_t>(d);
  const uintptr_t end_floor = (begin + n) & ~uintptr_t{7};
  if (n < 8 || end_floor < begin + 8) {
    copy_ascending(d, s, n);  // no aligned word inside: nothing a poller can wait on
    return;
  }
  const size_t head = end_floor - 8 - begin;  // bytes below the last aligned word
  copy_ascending(d, s, head);
  uint64_t word;
  std::memcpy(&word, s + head, sizeof word);
  __atomic_store_n(reinterpret_cast<uint64_t*>(d + head), word, __ATOMIC_RELEASE);
  copy_ascending(d + head + 8, s + head + 8, n - head - 8);
}

}  // namespace vroce::core
