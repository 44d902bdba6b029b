// A refcounted, page-granular registration cache for one protection domain: regMr of a range
// that lies inside a range already registered reuses that registration (a hit); otherwise the
// page-aligned range is registered (a miss). Overlapping but not containing ranges are registered
// separately rather than merged: merging would mean re-registering memory that in-flight
// requests use under the old keys. Host and CUDA addresses share one address space (UVA), so
// reuse does not look at the kind. dma-buf ranges are registered exactly as given, because the
// fd may not cover the surrounding pages.
//
// Thread-safe: NCCL registers on its service thread while the progress thread sends with keys
// it already holds; one mutex guards the cache and is held during registration, so two threads
// asking for the same range register it once. The interval logic is pure and is unit-tested
// with a fake Registrar; VerbsRegistrar (verbs_registrar.h) is the real one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace roce {

enum class MemoryKind { Host, Cuda, DmaBuf };

struct RegionRequest {
  uint64_t addr = 0;
  size_t length = 0;
  MemoryKind kind = MemoryKind::Host;
  int dmabuf_fd = -1;          // DmaBuf only; used during the call, never kept
  uint64_t dmabuf_offset = 0;  // DmaBuf only: offset of addr inside the dma-buf
};

struct Registration {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  std::shared_ptr<void> owner;  // releasing the last reference deregisters
};

class Registrar {
 public:
  virtual ~Registrar() = default;
  // Registers exactly the requested range; throws (with a complete message) on failure.
  virtual Registration register_region(const RegionRequest& request) = 0;
};

// What acquire() hands out; valid until the matching release().
struct CachedRegion {
  uint64_t addr = 0;  // the registered range, which contains the requested one
  size_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  MemoryKind kind = MemoryKind::Host;
};

struct MrCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t deregistrations = 0;
  uint64_t live_regions = 0;
  uint64_t live_bytes = 0;
};

class MrCache {
 public:
  MrCache(std::unique_ptr<Registrar> registrar, size_t page_size);
  // Regions still acquired are deregistered, with a WARN naming how many leaked.
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // A region covering [addr, addr + size) (size 0 counts as one byte). Throws what the
  // registrar throws, and std::invalid_argument for a range that wraps around.
  const CachedRegion* acquire(uint64_t addr, size_t size, MemoryKind kind);
  const CachedRegion* acquire_dmabuf(uint64_t addr, size_t size, uint64_t offset, int fd);

  // Drops one reference; the last one deregisters. Returns false (and changes nothing) for a
  // pointer this cache did not hand out or already released completely.
  bool release(const CachedRegion* region);

  MrCacheStats stats() const;
  size_t page_size() const noexcept { return page_size_; }

 private:
  struct Entry {
    CachedRegion region;
    Registration registration;
    uint64_t refs = 0;
  };

  const CachedRegion* acquire_locked(const RegionRequest& aligned, uint64_t want_begin,
                                     uint64_t want_end);
  Entry* find_containing(uint64_t begin, uint64_t end) const;

  std::unique_ptr<Registrar> registrar_;
  size_t page_size_;
  mutable std::mutex mutex_;
  std::multimap<uint64_t, std::unique_ptr<Entry>> entries_;  // by start address
  size_t longest_ = 0;  // bounds the backward search in find_containing()
  MrCacheStats stats_;
};

}  // namespace roce
