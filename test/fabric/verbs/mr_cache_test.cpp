// The MR cache with the verbs registrar over vroce: relaxed-ordering registrations through
// ibv_reg_mr_iova2 and a dma-buf registration whose fd is closed right away (as NCCL does) both
// carry RDMA writes, and the cache reuses registrations for ranges inside them.
#include "core/memory/mr_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <numeric>
#include <vector>

#include "connected_pair.h"
#include "core/memory/gdr.h"
#include "core/memory/verbs_registrar.h"
#include "test_addresses.h"
#include "verbs/memory_region.h"
#include "vroce_process.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace roce;

TEST_CASE("cached registrations over vroce (relaxed ordering, dma-buf) carry RDMA writes",
          "[mr_cache][vroce]") {
  const auto lib = test::load_vroce(vroce_device_list({"pv0", "pv1"}));
  const DiscoveryResult found =
      test::value_of(discover_devices(lib, DiscoveryOptions::from_config(test::config_from_env())));
  REQUIRE(found.devices.size() == 2);
  test::Side a = test::make_side(found.devices[0]);
  test::Side b = test::make_side(found.devices[1]);
  test::connect(a, b, 104);

  const RelaxedOrdering relaxed = decide_relaxed_ordering(
      test::config_from_env().pci_relaxed_ordering, lib->fn().reg_mr_iova2 != nullptr);
  INFO("relaxed ordering: " << relaxed.note);
  REQUIRE(relaxed.enabled);  // vroce exports ibv_reg_mr_iova2, and the default is auto
  const long page = sysconf(_SC_PAGESIZE);
  MrCache cache(std::make_unique<VerbsRegistrar>(b.pd, relaxed.enabled), static_cast<size_t>(page));

  constexpr size_t kBytes = 64 * 1024;
  std::vector<uint8_t> source(kBytes);
  std::iota(source.begin(), source.end(), uint8_t{1});
  auto source_mr =
      verbs::MemoryRegion::register_memory(a.pd, source.data(), kBytes, IBV_ACCESS_LOCAL_WRITE);

  // Host memory, registered with IBV_ACCESS_RELAXED_ORDERING through ibv_reg_mr_iova2.
  std::vector<uint8_t> host(kBytes + 2 * static_cast<size_t>(page), 0);
  uint8_t* target = host.data() + 100;  // deliberately not page-aligned
  const CachedRegion* host_region =
      cache.acquire(reinterpret_cast<uintptr_t>(target), kBytes, MemoryKind::Host);
  CHECK(host_region->addr <= reinterpret_cast<uintptr_t>(target));
  CHECK(host_region->addr + host_region->length >= reinterpret_cast<uintptr_t>(target) + kBytes);
  const ibv_wc host_write =
      test::rdma_write(a, source.data(), kBytes, source_mr->lkey(),
                       reinterpret_cast<uintptr_t>(target), host_region->rkey);
  CHECK(host_write.status == IBV_WC_SUCCESS);
  CHECK(std::equal(source.begin(), source.end(), target));
  // A range inside is a hit and carries the same keys.
  const CachedRegion* inner =
      cache.acquire(reinterpret_cast<uintptr_t>(target) + 4096, 512, MemoryKind::Host);
  CHECK(inner == host_region);
  CHECK(cache.stats().hits == 1);

  // A dma-buf stand-in (vroce maps the fd; a memfd works): registered, fd closed immediately.
  const int fd = memfd_create("pv-dmabuf", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, static_cast<off_t>(kBytes)) == 0);
  void* view = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(view != MAP_FAILED);
  const CachedRegion* dmabuf_region =
      cache.acquire_dmabuf(reinterpret_cast<uintptr_t>(view), kBytes, 0, fd);
  close(fd);  // NCCL closes the fd right after regMrDmaBuf; the registration must not need it
  CHECK(dmabuf_region->kind == MemoryKind::DmaBuf);
  const ibv_wc dmabuf_write =
      test::rdma_write(a, source.data(), kBytes, source_mr->lkey(),
                       reinterpret_cast<uintptr_t>(view), dmabuf_region->rkey);
  CHECK(dmabuf_write.status == IBV_WC_SUCCESS);
  CHECK(std::equal(source.begin(), source.end(), static_cast<uint8_t*>(view)));

  CHECK(cache.release(inner));
  CHECK(cache.release(host_region));
  CHECK(cache.release(dmabuf_region));
  CHECK(cache.stats().live_regions == 0);
  CHECK(cache.stats().deregistrations == 2);
  munmap(view, kBytes);
}
