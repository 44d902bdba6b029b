// A fixed-capacity pool of request slots with O(1) take and give-back and no allocation after
// construction, so the data path never allocates. Slots are identified by a small index, which is
// what travels in work-request ids and CTS entries. Not thread-safe: each pool belongs to one comm,
// and NCCL drives a comm's data path from its progress thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace roce {

template <typename T, int Capacity>
class RequestPool {
  static_assert(Capacity > 0 && Capacity < 65535,
                "slot indices travel as 16-bit values, and 65535 is kNoSlot");

 public:
  RequestPool() noexcept {
    for (int i = 0; i < Capacity; ++i) {
      free_[static_cast<size_t>(i)] = static_cast<uint16_t>(Capacity - 1 - i);
      in_use_[static_cast<size_t>(i)] = false;
    }
    free_count_ = Capacity;
  }

  // What take() answers when every slot is taken.
  static constexpr uint16_t kNoSlot = UINT16_MAX;

  // A free slot, or kNoSlot when all are taken (the caller reports "cannot post now"). A plain
  // index rather than an optional: the data path takes one per message, and the optional's flag
  // cost it a register spill and a reload on every take.
  uint16_t take() noexcept {
    if (free_count_ == 0) {
      return kNoSlot;
    }
    const uint16_t index = free_[static_cast<size_t>(--free_count_)];
    if (index == kNoSlot) {
      __builtin_unreachable();  // free_ holds indices below Capacity: callers' checks fold away
    }
    in_use_[index] = true;
    return index;
  }

  // Returns a slot; false if it was not taken (a double release, which callers treat as a bug).
  bool give_back(uint16_t index) noexcept {
    if (index >= Capacity || !in_use_[index]) {
      return false;
    }
    give_back_taken(index);
    return true;
  }

  // Returns a slot the caller knows to be taken (test() of a request NCCL holds, whose state was
  // checked on the way in): give_back without the checks.
  void give_back_taken(uint16_t index) noexcept {
    in_use_[index] = false;
    free_[static_cast<size_t>(free_count_++)] = index;
  }

  bool in_use(uint16_t index) const noexcept { return index < Capacity && in_use_[index]; }
  int available() const noexcept { return free_count_; }
  static constexpr uint16_t capacity() noexcept { return static_cast<uint16_t>(Capacity); }

  T& operator[](uint16_t index) noexcept { return slots_[index]; }
  const T& operator[](uint16_t index) const noexcept { return slots_[index]; }

  // Index of a slot from its address (for requests handed to NCCL as pointers).
  std::optional<uint16_t> index_of(const T* slot) const noexcept {
    if (slot < slots_.data() || slot >= slots_.data() + Capacity) {
      return std::nullopt;
    }
    return static_cast<uint16_t>(slot - slots_.data());
  }

 private:
  std::array<T, static_cast<size_t>(Capacity)> slots_{};
  std::array<uint16_t, static_cast<size_t>(Capacity)> free_{};
  std::array<bool, static_cast<size_t>(Capacity)> in_use_{};
  int free_count_ = 0;
};

}  // namespace roce
