// Registrations over verbs for the MR cache: see verbs_registrar.h.
#include "core/memory/verbs_registrar.h"

#include "verbs/memory_region.h"

namespace roce {

VerbsRegistrar::VerbsRegistrar(std::shared_ptr<verbs::ProtectionDomain> pd, bool relaxed_ordering)
    : pd_(std::move(pd)), relaxed_ordering_(relaxed_ordering) {}

Registration VerbsRegistrar::register_region(const RegionRequest& request) {
  const int access = kAccess | (relaxed_ordering_ ? IBV_ACCESS_RELAXED_ORDERING : 0);
  std::shared_ptr<verbs::MemoryRegion> mr;
  void* addr = reinterpret_cast<void*>(static_cast<uintptr_t>(request.addr));
  if (request.kind == MemoryKind::DmaBuf) {
    mr = verbs::MemoryRegion::register_dmabuf(pd_, request.dmabuf_offset, request.length,
                                              request.addr, request.dmabuf_fd, access);
  } else if (relaxed_ordering_) {
    mr = verbs::MemoryRegion::register_iova2(pd_, addr, request.length, request.addr,
                                             static_cast<unsigned>(access));
  } else {
    mr = verbs::MemoryRegion::register_memory(pd_, addr, request.length, access);
  }
  Registration registration;
  registration.lkey = mr->lkey();
  registration.rkey = mr->rkey();
  registration.owner = std::move(mr);
  return registration;
}

}  // namespace roce
