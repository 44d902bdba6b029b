// Memory for the objects whose addresses NCCL holds: comms (with their request slots inside) and
// memory handles. A block given back by close or deregMr is zeroed and kept for the next object of
// the same size instead of returning to malloc. A stale pointer NCCL passes back later (a double
// close, a request tested after its comm was closed, a deregistered mhandle) therefore reads a
// zero type tag and is refused with a clear error, instead of reading freed memory. Each block
// also carries a live mark in front of the object, so the setup paths can ask is_live() before
// touching the object at all (a member call on a dead polymorphic object is undefined even when
// its memory is readable). The data path is unchanged: it already checks the type tags. Blocks
// live until the plugin unloads; their number is bounded by the most comms and handles ever open
// at once.
//
// Limitation: once a block holds a new object, a stale pointer to it names that new object; only
// a handle with a generation (an index, not an address) could tell them apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace roce::recycled {

// At least `size` bytes, aligned for any fundamental type; throws std::bad_alloc.
void* allocate(std::size_t size);
// Zeroes the `size` bytes of `object`'s block and keeps it for a later allocate(size).
void release(void* object, std::size_t size) noexcept;
// True when `object` was returned by allocate() and not released since. `object` must point to
// readable memory at least 16 bytes into an allocation (any pointer NCCL got from this plugin).
// Inline: isend, irecv and iflush ask it on every call.
inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::uint64_t kLiveMark = 0x6c6976652d626c6bULL;  // "live-blk"
inline bool is_live(const void* object) noexcept {
  std::uint64_t mark = 0;
  std::memcpy(&mark, static_cast<const unsigned char*>(object) - kHeaderBytes, sizeof mark);
  return mark == kLiveMark;
}
// Blocks kept now, for tests.
std::size_t kept();

}  // namespace roce::recycled
