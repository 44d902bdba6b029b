// The registration cache's interval logic, with a registrar that records what it registers.
#include "core/memory/mr_cache.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace roce;

namespace {

struct Ledger {
  std::vector<RegionRequest> registered;
  std::atomic<int> live{0};
  bool fail_next = false;
};

class FakeRegistrar : public Registrar {
 public:
  explicit FakeRegistrar(Ledger* ledger) : ledger_(ledger) {}
  Registration register_region(const RegionRequest& request) override {
    if (ledger_->fail_next) {
      ledger_->fail_next = false;
      throw std::runtime_error("registration refused");
    }
    ledger_->registered.push_back(request);
    ++ledger_->live;
    Registration r;
    r.lkey = static_cast<uint32_t>(ledger_->registered.size());
    r.rkey = r.lkey + 1000;
    Ledger* ledger = ledger_;
    r.owner = std::shared_ptr<void>(nullptr, [ledger](void*) { --ledger->live; });
    return r;
  }

 private:
  Ledger* ledger_;
};

constexpr size_t kPage = 4096;

}  // namespace

TEST_CASE("a miss registers the whole pages around the request", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  const CachedRegion* region = cache.acquire(0x10010, 100, MemoryKind::Host);
  REQUIRE(ledger.registered.size() == 1);
  CHECK(ledger.registered[0].addr == 0x10000);
  CHECK(ledger.registered[0].length == kPage);
  CHECK(region->addr == 0x10000);
  CHECK(region->length == kPage);
  CHECK(region->lkey == 1);
  CHECK(region->rkey == 1001);
  CHECK(cache.stats().misses == 1);
  CHECK(cache.stats().hits == 0);
}

TEST_CASE("a range spanning a page boundary registers both pages", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  cache.acquire(0x10ff0, 0x20, MemoryKind::Cuda);
  REQUIRE(ledger.registered.size() == 1);
  CHECK(ledger.registered[0].addr == 0x10000);
  CHECK(ledger.registered[0].length == 2 * kPage);
  CHECK(ledger.registered[0].kind == MemoryKind::Cuda);
}

TEST_CASE("a range inside a registered one reuses it and counts a hit", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  const CachedRegion* big = cache.acquire(0x100000, 16 * kPage, MemoryKind::Host);
  const CachedRegion* inner = cache.acquire(0x100000 + 3 * kPage + 5, 100, MemoryKind::Host);
  CHECK(inner == big);
  CHECK(ledger.registered.size() == 1);
  CHECK(cache.stats().hits == 1);
  CHECK(cache.stats().live_regions == 1);
}

TEST_CASE("overlapping ranges that are not contained register separately", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  const CachedRegion* a = cache.acquire(0x100000, 4 * kPage, MemoryKind::Host);
  const CachedRegion* b = cache.acquire(0x100000 + 2 * kPage, 4 * kPage, MemoryKind::Host);
  CHECK(a != b);
  REQUIRE(ledger.registered.size() == 2);
  CHECK(ledger.registered[1].addr == 0x100000 + 2 * kPage);
  // A later range inside the second (and not the first) finds the second.
  CHECK(cache.acquire(0x100000 + 5 * kPage, 10, MemoryKind::Host) == b);
  // One inside both finds one of them without registering.
  const CachedRegion* c = cache.acquire(0x100000 + 3 * kPage, 10, MemoryKind::Host);
  CHECK((c == a || c == b));
  CHECK(ledger.registered.size() == 2);
}

TEST_CASE("a long registration is found behind shorter ones that start after it", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  for (uint64_t i = 1; i < 50; ++i) {
    cache.acquire(0x100000 + i * 8 * kPage, 10, MemoryKind::Host);
  }
  const CachedRegion* long_region = cache.acquire(0x100000, 1024 * kPage, MemoryKind::Host);
  CHECK(ledger.registered.size() == 50);
  CHECK(cache.acquire(0x100000 + 900 * kPage, kPage, MemoryKind::Host) == long_region);
  CHECK(ledger.registered.size() == 50);
}

TEST_CASE("the last release deregisters; earlier ones only drop a reference", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  const CachedRegion* first = cache.acquire(0x200000, 100, MemoryKind::Host);
  const CachedRegion* second = cache.acquire(0x200010, 50, MemoryKind::Host);
  REQUIRE(first == second);
  CHECK(ledger.live == 1);
  CHECK(cache.release(first));
  CHECK(ledger.live == 1);
  CHECK(cache.release(second));
  CHECK(ledger.live == 0);
  CHECK(cache.stats().deregistrations == 1);
  CHECK(cache.stats().live_regions == 0);
  CHECK(cache.stats().live_bytes == 0);
  // Released completely: the handle is no longer known.
  CHECK_FALSE(cache.release(first));
  // The range registers anew.
  cache.acquire(0x200000, 100, MemoryKind::Host);
  CHECK(ledger.registered.size() == 2);
}

TEST_CASE("release of a pointer the cache did not hand out changes nothing", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  cache.acquire(0x200000, 100, MemoryKind::Host);
  CachedRegion stranger{0x200000, kPage, 1, 1001, MemoryKind::Host};
  CHECK_FALSE(cache.release(&stranger));
  CHECK_FALSE(cache.release(nullptr));
  CHECK(ledger.live == 1);
}

TEST_CASE("dma-buf ranges are registered exactly, with the fd and offset", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  const CachedRegion* region = cache.acquire_dmabuf(0x7f0000001010, 5000, 16, 42);
  REQUIRE(ledger.registered.size() == 1);
  const RegionRequest& request = ledger.registered[0];
  CHECK(request.kind == MemoryKind::DmaBuf);
  CHECK(request.addr == 0x7f0000001010);
  CHECK(request.length == 5000);
  CHECK(request.dmabuf_fd == 42);
  CHECK(request.dmabuf_offset == 16);
  CHECK(region->kind == MemoryKind::DmaBuf);
  // regMr of a CUDA pointer inside it reuses the dma-buf registration (same memory, UVA).
  CHECK(cache.acquire(0x7f0000001100, 64, MemoryKind::Cuda) == region);
}

TEST_CASE("a failed registration leaves the cache unchanged and counts the miss", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  ledger.fail_next = true;
  CHECK_THROWS_WITH(cache.acquire(0x300000, 10, MemoryKind::Host),
                    Catch::Contains("registration refused"));
  CHECK(cache.stats().misses == 1);
  CHECK(cache.stats().live_regions == 0);
  CHECK(cache.acquire(0x300000, 10, MemoryKind::Host) != nullptr);
}

TEST_CASE("ranges that wrap around the address space are refused", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  CHECK_THROWS_AS(cache.acquire(~uint64_t{0} - 10, 100, MemoryKind::Host), std::invalid_argument);
  CHECK(ledger.registered.empty());
}

TEST_CASE("the page size must be a power of two", "[mr_cache]") {
  Ledger ledger;
  CHECK_THROWS_AS(MrCache(std::make_unique<FakeRegistrar>(&ledger), 3000), std::invalid_argument);
}

TEST_CASE("concurrent acquire and release of one range register it once at a time", "[mr_cache]") {
  Ledger ledger;
  MrCache cache(std::make_unique<FakeRegistrar>(&ledger), kPage);
  const CachedRegion* anchor = cache.acquire(0x400000, 64 * kPage, MemoryKind::Host);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 500; ++i) {
        const uint64_t addr = 0x400000 + static_cast<uint64_t>((t * 7 + i) % 60) * kPage;
        const CachedRegion* r = cache.acquire(addr, kPage, MemoryKind::Host);
        cache.release(r);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(ledger.registered.size() == 1);  // every request fell inside the anchor
  CHECK(cache.stats().hits == 2000);
  CHECK(cache.release(anchor));
  CHECK(ledger.live == 0);
}
