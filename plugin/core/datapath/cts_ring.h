// The clear-to-send (CTS) ring: the receiver announces each irecv by writing one slot of
// entries (buffer address, size, rkey, tag) with a single RDMA WRITE into a ring that lives in the
// sender's memory; the sender polls its next slot. This header is the layout of an entry and the
// slot/sequence arithmetic both sides share. Pure: no verbs, unit-tested without a device.
//
// Torn slots: an RDMA WRITE may become visible to the sender's CPU in any byte order, so every
// entry carries the slot's sequence number in its LAST eight bytes and the sender uses a slot only
// when each of its n entries shows the expected sequence. Sequences start at 1, so a zeroed ring
// never looks ready, and they never repeat within a slot (64-bit, +kCtsRingSlots per reuse).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "core/datapath/data_path_limits.h"

// Functions that read memory a NIC writes by DMA (the CTS ring). The CPU-side ordering is the
// acquire load of each entry's sequence; no CPU thread releases anything. Under ThreadSanitizer
// with vroce, the "NIC" is a CPU thread writing with memcpy, which TSan would report as a race
// on every poll, so these few readers are not instrumented there (and only there).
#if defined(__SANITIZE_THREAD__)
#define ROCE_READS_NIC_MEMORY __attribute__((no_sanitize("thread")))
#else
#define ROCE_READS_NIC_MEMORY
#endif

namespace roce {

struct CtsEntry {
  uint64_t addr = 0;     // receive buffer: remote address of the sender's RDMA WRITE
  uint32_t size = 0;     // receive buffer size in bytes (<= kMaxMessageBytes)
  uint32_t rkey = 0;     // rkey of the receive buffer's memory region
  int32_t tag = 0;       // NCCL tag of this receive (the sending rank, for shared comms)
  uint16_t request = 0;  // receiver's request slot: where the sizes of a multi-receive go
  uint8_t count = 0;     // n: entries in this multi-receive (same in every entry of the slot)
  uint8_t reserved = 0;
  uint64_t seq = 0;  // the receiver's irecv sequence number; must stay the last member
};
static_assert(sizeof(CtsEntry) == 32, "CTS entries are part of the wire protocol");
static_assert(offsetof(CtsEntry, seq) == sizeof(CtsEntry) - sizeof(uint64_t),
              "the sequence must be the last bytes of an entry");

inline constexpr size_t kCtsSlotBytes = sizeof(CtsEntry) * kMaxRecvs;
inline constexpr size_t kCtsRingBytes = kCtsSlotBytes * kCtsRingSlots;

// The irecv with sequence `seq` (1, 2, ...) uses this slot of the ring.
constexpr uint32_t cts_slot_of(uint64_t seq) noexcept {
  return static_cast<uint32_t>(seq & (kCtsRingSlots - 1));
}

// Byte offset of that slot from the start of the ring (the RDMA WRITE's remote address offset).
constexpr size_t cts_slot_offset(uint64_t seq) noexcept {
  return size_t{cts_slot_of(seq)} * kCtsSlotBytes;
}

// The receiver's side: it fills the n entries of one slot in a local staging area before the
// RDMA WRITE.
struct CtsBuffer {
  uint64_t addr;
  uint32_t size;
  uint32_t rkey;
  int32_t tag;
};
// One entry of the slot of irecv `seq`, request slot `request`, of n buffers. Inline: irecv
// fills its entries as it checks its buffers.
inline void fill_cts_entry(CtsEntry& e, const CtsBuffer& buffer, uint64_t seq, uint16_t request,
                           uint8_t n) noexcept {
  e.addr = buffer.addr;
  e.size = buffer.size;
  e.rkey = buffer.rkey;
  e.tag = buffer.tag;
  e.request = request;
  e.count = n;
  e.reserved = 0;
  e.seq = seq;
}

// All n entries of a slot at once; returns the bytes to write (n entries). irecv fills entry by
// entry as it checks its buffers; this whole-slot form is how tests and tools build slots.
inline size_t fill_cts_slot(std::span<CtsEntry> out, std::span<const CtsBuffer> buffers,
                            uint64_t seq, uint16_t request) noexcept {
  const auto n = static_cast<uint8_t>(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    fill_cts_entry(out[i], buffers[i], seq, request, n);
  }
  return buffers.size() * sizeof(CtsEntry);
}

enum class CtsSlotState {
  NotReady,  // the receiver has not written this slot yet (or the write is still landing)
  Ready,     // all n entries carry the expected sequence; *count holds n
  Corrupt,   // entry 0 carries the expected sequence but an impossible count: a broken peer
};

// The sequence an entry carries, read with acquire ordering, so that the other fields read
// afterwards are at least as new. The builtin rather than std::atomic_ref: the load must stay
// inside this (uninstrumented under TSan) function; it is the same acquire load.
ROCE_READS_NIC_MEMORY inline uint64_t cts_entry_seq(const CtsEntry& e) noexcept {
  return __atomic_load_n(&e.seq, __ATOMIC_ACQUIRE);
}

// Whether the receiver has begun the slot of the irecv with sequence `expected_seq`: its first
// entry carries the sequence (check_cts_slot's first look, alone).
ROCE_READS_NIC_MEMORY inline bool cts_slot_begun(const CtsEntry* slot,
                                                 uint64_t expected_seq) noexcept {
  return cts_entry_seq(slot[0]) == expected_seq;
}

// check_cts_slot for a slot that cts_slot_begun() has already found begun: the rest of the
// check (its count, and the sequences of entries 1..n-1). The sender's isend takes this once
// its caller has looked at entry 0.
ROCE_READS_NIC_MEMORY inline CtsSlotState check_begun_cts_slot(const CtsEntry* slot,
                                                               uint64_t expected_seq,
                                                               int* count) noexcept {
  int n = slot[0].count;
  if (n < 1 || n > kMaxRecvs) {
    return CtsSlotState::Corrupt;
  }
  for (int i = 1; i < n; ++i) {
    if (cts_entry_seq(slot[i]) != expected_seq) {
      return CtsSlotState::NotReady;
    }
  }
  *count = n;
  return CtsSlotState::Ready;
}

// The sender's side: checks the slot for the irecv with sequence `expected_seq`. Reads the
// sequences with acquire ordering, so the other fields read afterwards are at least as new.
ROCE_READS_NIC_MEMORY inline CtsSlotState check_cts_slot(const CtsEntry* slot,
                                                         uint64_t expected_seq,
                                                         int* count) noexcept {
  if (!cts_slot_begun(slot, expected_seq)) {
    return CtsSlotState::NotReady;
  }
  return check_begun_cts_slot(slot, expected_seq, count);
}

// A copy of one entry of a slot check_cts_slot found Ready, so the ring slot may be rewritten
// later. The ring is NIC-written memory: copied word by word through volatile reads (never a
// library memcpy), after check_cts_slot's acquire load of the sequences.
ROCE_READS_NIC_MEMORY inline CtsEntry read_cts_entry(const CtsEntry* entry) noexcept {
  static_assert(sizeof(CtsEntry) % sizeof(uint64_t) == 0);
  constexpr size_t kWords = sizeof(CtsEntry) / sizeof(uint64_t);
  const auto* from = reinterpret_cast<const volatile uint64_t*>(entry);
  uint64_t words[kWords];
  for (size_t w = 0; w < kWords; ++w) {
    words[w] = from[w];
  }
  CtsEntry copy;
  std::memcpy(&copy, words, sizeof copy);  // not through a uint64_t*: that would break aliasing
  return copy;
}

// The entry of a Ready slot of one receive (count 1), for the send matched to it: only what
// that send uses (buffer address, size, rkey, tag) is read from the ring, each field once through
// a volatile view; count and seq are what check_cts_slot found, request is unused for one
// receive. Fewer loads than read_cts_entry, and the fields can stay in registers.
ROCE_READS_NIC_MEMORY inline CtsEntry read_single_cts_entry(const CtsEntry* entry,
                                                            uint64_t seq) noexcept {
  const volatile CtsEntry& from = *entry;
  CtsEntry copy;
  copy.addr = from.addr;
  copy.size = from.size;
  copy.rkey = from.rkey;
  copy.tag = from.tag;
  copy.count = 1;
  copy.seq = seq;
  return copy;
}

}  // namespace roce
