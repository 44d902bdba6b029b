// The per-device table that turns an lkey/rkey into a memory region, as a NIC's MPT does.
// A key is (slot << 8) | tag: the slot indexes the table and the 8-bit tag changes every time the
// slot is reused, so a stale key of a deregistered MR is refused instead of reaching the MR that
// took its slot. Lookups are lock-free (the progress thread does one per packet); a successful
// lookup pins the MR's slot until the MrRef goes away, and removal waits for pins to drain, so
// ibv_dereg_mr never returns while the engine still copies into the region.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/mr.h"

namespace vroce::core {

struct Pd;

// Why a key did not resolve; the caller maps it to a completion status or a NAK.
enum class KeyError : uint8_t { None, InvalidKey, WrongPd, OutOfBounds, AccessDenied };

// A pinned MR; unpins on destruction. Move-only.
class MrRef {
 public:
  MrRef() = default;
  MrRef(Mr* mr, std::atomic<uint32_t>* pins) noexcept : mr_(mr), pins_(pins) {}
  MrRef(MrRef&& other) noexcept : mr_(other.mr_), pins_(other.pins_) {
    other.mr_ = nullptr;
    other.pins_ = nullptr;
  }
  MrRef& operator=(MrRef&& other) noexcept {
    if (this != &other) {
      release();
      mr_ = other.mr_;
      pins_ = other.pins_;
      other.mr_ = nullptr;
      other.pins_ = nullptr;
    }
    return *this;
  }
  MrRef(const MrRef&) = delete;
  MrRef& operator=(const MrRef&) = delete;
  ~MrRef() { release(); }

  Mr* get() const noexcept { return mr_; }
  Mr* operator->() const noexcept { return mr_; }
  explicit operator bool() const noexcept { return mr_ != nullptr; }

 private:
  void release() noexcept {
    if (pins_ != nullptr) {
      pins_->fetch_sub(1, std::memory_order_release);
      pins_ = nullptr;
    }
    mr_ = nullptr;
  }
  Mr* mr_ = nullptr;
  std::atomic<uint32_t>* pins_ = nullptr;
};

class KeyTable {
 public:
  static constexpr uint32_t kChunkSlots = 4096;
  // 2^24 regions per device, the max_mr the device reports; chunks are allocated on demand.
  static constexpr uint32_t kMaxChunks = 4096;
  static constexpr uint32_t kMaxSlots = kChunkSlots * kMaxChunks;
  static_assert(kMaxSlots <= (uint32_t{1} << 24), "a key is slot << 8 | tag in 32 bits");

  KeyTable() = default;
  KeyTable(const KeyTable&) = delete;
  KeyTable& operator=(const KeyTable&) = delete;
  ~KeyTable();

  // Allocates a slot for `mr` and sets mr->slot, lkey and rkey. Returns false when full.
  bool insert(Mr* mr);

  // Removes the MR's slot and waits until no lookup still pins it.
  void remove(Mr* mr);

  // Resolves `key` for an access of `length` bytes at IOVA `addr` needing `access` rights
  // (0 for a local read) by a QP of `pd`. On failure returns an empty ref and sets *error.
  MrRef lookup(uint32_t key, const Pd* pd, uint64_t addr, uint64_t length, unsigned access,
               KeyError* error) const noexcept;

 private:
  // Slots live as long as the table, so a lookup may touch a slot whose MR is being removed;
  // it touches the MR only after pinning the slot and seeing the same MR and tag again.
  struct Slot {
    std::atomic<Mr*> mr{nullptr};
    std::atomic<uint8_t> tag{0};
    std::atomic<uint32_t> pins{0};
  };
  struct Chunk {
    Slot slots[kChunkSlots];
  };

  Slot* slot_at(uint32_t index) const noexcept;

  std::atomic<Chunk*> chunks_[kMaxChunks] = {};
  std::mutex mutex_;  // insert/remove; lookups do not take it
  std::vector<uint32_t> free_slots_;
  uint32_t next_slot_ = 0;
};

}  // namespace vroce::core
