// Recycled blocks: see recycled_blocks.h. Allocation happens on setup paths only (connect,
// accept, regMr, close, deregMr), so a mutex is fine.
#include "core/recycled_blocks.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace roce::recycled {
namespace {

// In front of every object: the live mark, padded so the object keeps malloc's 16-byte alignment.
constexpr std::size_t kHeader = kHeaderBytes;

void set_mark(void* block, std::uint64_t mark) noexcept {
  auto* word = static_cast<volatile std::uint64_t*>(block);
  *word = mark;
}

// Set when the pool is destroyed at unload: a comm that a later static destructor closes then
// goes straight back to the allocator.
bool g_pool_gone = false;

struct Pool {
  std::mutex mutex;
  std::map<std::size_t, std::vector<void*>> free_by_size;
  ~Pool() {
    for (auto& [size, blocks] : free_by_size) {
      for (void* block : blocks) {
        ::operator delete(block);
      }
    }
    g_pool_gone = true;
  }
};

Pool& pool() {
  static Pool instance;
  return instance;
}

}  // namespace

void* allocate(std::size_t size) {
  Pool& p = pool();
  void* block = nullptr;
  {
    const std::lock_guard lock(p.mutex);
    auto it = p.free_by_size.find(size);
    if (it != p.free_by_size.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
    }
  }
  if (block == nullptr) {
    block = ::operator new(size + kHeader);
  }
  set_mark(block, kLiveMark);
  return static_cast<unsigned char*>(block) + kHeader;
}

void release(void* object, std::size_t size) noexcept {
  if (object == nullptr) {
    return;
  }
  void* block = static_cast<unsigned char*>(object) - kHeader;
  set_mark(block, 0);
  // Volatile stores: the object's lifetime has ended, and these must not be optimised away.
  auto* bytes = static_cast<volatile unsigned char*>(object);
  for (std::size_t i = 0; i < size; ++i) {
    bytes[i] = 0;
  }
  if (g_pool_gone) {
    ::operator delete(block);
    return;
  }
  try {
    Pool& p = pool();
    const std::lock_guard lock(p.mutex);
    p.free_by_size[size].push_back(block);
  } catch (...) {
    ::operator delete(block);  // out of memory for the list: lose the check, not the block
  }
}

std::size_t kept() {
  Pool& p = pool();
  const std::lock_guard lock(p.mutex);
  std::size_t n = 0;
  for (const auto& [size, blocks] : p.free_by_size) {
    n += blocks.size();
  }
  return n;
}

}  // namespace roce::recycled
