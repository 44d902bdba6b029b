// Registration cache: see mr_cache.h.
#include "core/memory/mr_cache.h"

#include <fmt/format.h>

#include <stdexcept>

#include "util/log.h"

namespace roce {

MrCache::MrCache(std::unique_ptr<Registrar> registrar, size_t page_size)
    : registrar_(std::move(registrar)), page_size_(page_size) {
  if (page_size_ == 0 || (page_size_ & (page_size_ - 1)) != 0) {
    throw std::invalid_argument(
        fmt::format("MR cache page size {} is not a power of two", page_size_));
  }
}

MrCache::~MrCache() {
  if (!entries_.empty()) {
    ROCE_WARN(NCCL_NET, "{} memory registration(s) were never deregistered; releasing them now",
              entries_.size());
  }
}

MrCache::Entry* MrCache::find_containing(uint64_t begin, uint64_t end) const {
  // Only entries starting in [end - longest_, begin] can contain [begin, end).
  const uint64_t lowest = end - begin >= longest_ ? begin : (end > longest_ ? end - longest_ : 0);
  auto it = entries_.upper_bound(begin);
  while (it != entries_.begin()) {
    --it;
    if (it->first < lowest) {
      break;
    }
    const CachedRegion& region = it->second->region;
    if (region.addr + region.length >= end) {
      return it->second.get();
    }
  }
  return nullptr;
}

const CachedRegion* MrCache::acquire_locked(const RegionRequest& aligned, uint64_t want_begin,
                                            uint64_t want_end) {
  if (Entry* hit = find_containing(want_begin, want_end)) {
    ++hit->refs;
    ++stats_.hits;
    return &hit->region;
  }
  ++stats_.misses;
  Registration registration = registrar_->register_region(aligned);
  auto entry = std::make_unique<Entry>();
  entry->region = {aligned.addr, aligned.length, registration.lkey, registration.rkey,
                   aligned.kind};
  entry->registration = std::move(registration);
  entry->refs = 1;
  const CachedRegion* handle = &entry->region;
  entries_.emplace(aligned.addr, std::move(entry));
  if (aligned.length > longest_) {
    longest_ = aligned.length;
  }
  ++stats_.live_regions;
  stats_.live_bytes += aligned.length;
  return handle;
}

const CachedRegion* MrCache::acquire(uint64_t addr, size_t size, MemoryKind kind) {
  const uint64_t length = size == 0 ? 1 : size;
  if (addr + length < addr) {
    throw std::invalid_argument(
        fmt::format("memory range 0x{:x} + {} wraps around the address space", addr, size));
  }
  const uint64_t mask = ~static_cast<uint64_t>(page_size_ - 1);
  const uint64_t begin = addr & mask;
  const uint64_t end = (addr + length + page_size_ - 1) & mask;
  RegionRequest aligned;
  aligned.addr = begin;
  aligned.length = end - begin;
  aligned.kind = kind;
  std::lock_guard lock(mutex_);
  return acquire_locked(aligned, addr, addr + length);
}

const CachedRegion* MrCache::acquire_dmabuf(uint64_t addr, size_t size, uint64_t offset, int fd) {
  const uint64_t length = size == 0 ? 1 : size;
  if (addr + length < addr) {
    throw std::invalid_argument(
        fmt::format("memory range 0x{:x} + {} wraps around the address space", addr, size));
  }
  RegionRequest exact;
  exact.addr = addr;
  exact.length = length;
  exact.kind = MemoryKind::DmaBuf;
  exact.dmabuf_fd = fd;
  exact.dmabuf_offset = offset;
  std::lock_guard lock(mutex_);
  return acquire_locked(exact, addr, addr + length);
}

bool MrCache::release(const CachedRegion* region) {
  if (region == nullptr) {
    return false;
  }
  std::unique_ptr<Entry> doomed;  // deregistered after the lock is dropped
  {
    std::lock_guard lock(mutex_);
    auto [first, last] = entries_.equal_range(region->addr);
    for (auto it = first; it != last; ++it) {
      if (&it->second->region != region) {
        continue;
      }
      if (--it->second->refs > 0) {
        return true;
      }
      ++stats_.deregistrations;
      --stats_.live_regions;
      stats_.live_bytes -= it->second->region.length;
      doomed = std::move(it->second);
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

MrCacheStats MrCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace roce
