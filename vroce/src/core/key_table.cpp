#include "core/key_table.h"

#include <thread>

namespace vroce::core {

KeyTable::~KeyTable() {
  for (auto& chunk : chunks_) {
    delete chunk.load(std::memory_order_relaxed);
  }
}

KeyTable::Slot* KeyTable::slot_at(uint32_t index) const noexcept {
  Chunk* chunk = chunks_[index / kChunkSlots].load(std::memory_order_acquire);
  return chunk == nullptr ? nullptr : &chunk->slots[index % kChunkSlots];
}

bool KeyTable::insert(Mr* mr) {
  std::lock_guard lock(mutex_);
  uint32_t index;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (next_slot_ >= kMaxSlots) {
      return false;
    }
    index = next_slot_++;
    auto& chunk = chunks_[index / kChunkSlots];
    if (chunk.load(std::memory_order_relaxed) == nullptr) {
      chunk.store(new Chunk, std::memory_order_release);
    }
  }
  Slot* slot = slot_at(index);
  auto tag = static_cast<uint8_t>(slot->tag.load(std::memory_order_relaxed) + 1);
  // Slot 0 never takes tag 0, so no MR ever gets key 0, which programs use as "no key".
  if (index == 0 && tag == 0) {
    tag = 1;
  }
  slot->tag.store(tag, std::memory_order_relaxed);
  uint32_t key = (index << 8) | tag;
  mr->slot = index;
  mr->ibv.lkey = key;
  mr->ibv.rkey = key;
  slot->mr.store(mr, std::memory_order_release);
  return true;
}

void KeyTable::remove(Mr* mr) {
  Slot* slot = slot_at(mr->slot);
  slot->mr.store(nullptr, std::memory_order_seq_cst);
  // A lookup that pinned the slot before the store either sees it cleared when it re-checks
  // (and unpins at once) or holds a valid pin that the progress thread drops within one copy.
  while (slot->pins.load(std::memory_order_acquire) != 0) {
    std::this_thread::yield();
  }
  // Only now may the slot serve another MR.
  std::lock_guard lock(mutex_);
  free_slots_.push_back(mr->slot);
}

MrRef KeyTable::lookup(uint32_t key, const Pd* pd, uint64_t addr, uint64_t length, unsigned access,
                       KeyError* error) const noexcept {
  uint32_t index = key >> 8;
  Slot* slot = index < kMaxSlots ? slot_at(index) : nullptr;
  Mr* mr = slot == nullptr ? nullptr : slot->mr.load(std::memory_order_acquire);
  if (mr == nullptr) {
    *error = KeyError::InvalidKey;
    return {};
  }
  slot->pins.fetch_add(1, std::memory_order_seq_cst);
  MrRef ref(mr, &slot->pins);
  // The MR may be dereferenced only if it is still in the slot after the pin: remove() clears
  // the slot before it waits for pins to drain.
  if (slot->mr.load(std::memory_order_seq_cst) != mr ||
      slot->tag.load(std::memory_order_relaxed) != static_cast<uint8_t>(key & 0xFF)) {
    *error = KeyError::InvalidKey;
    return {};
  }
  if (mr->pd != pd) {
    *error = KeyError::WrongPd;
    return {};
  }
  if (!mr->covers(addr, length)) {
    *error = KeyError::OutOfBounds;
    return {};
  }
  if ((mr->access & access) != access) {
    *error = KeyError::AccessDenied;
    return {};
  }
  *error = KeyError::None;
  return ref;
}

}  // namespace vroce::core
