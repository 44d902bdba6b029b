// Recycled blocks: see recycled_blocks.h. Allocation happens on setup paths only (connect,
// accept, regMr, close, deregMr), so a mutex is fine.
#include "core/recycled_blocks.h"

#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace roce::recycled {
namespace {

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
  {
    const std::lock_guard lock(p.mutex);
    auto it = p.free_by_size.find(size);
    if (it != p.free_by_size.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      return block;
    }
  }
  return ::operator new(size);
}

void release(void* block, std::size_t size) noexcept {
  if (block == nullptr) {
    return;
  }
  // Volatile stores: the object's lifetime has ended, and these must not be optimised away.
  auto* bytes = static_cast<volatile unsigned char*>(block);
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
