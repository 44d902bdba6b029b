// A protection domain: the owner that MRs and QPs must share for a key to be usable. It counts
// its children so that ibv_dealloc_pd refuses (EBUSY) while any still exists.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>

namespace vroce::device {
struct Context;
}  // namespace vroce::device

namespace vroce::core {

class DeviceState;

struct Pd {
  ibv_pd ibv{};  // first member: users hold &ibv
  device::Context* ctx = nullptr;
  DeviceState* device = nullptr;
  std::atomic<uint32_t> children{0};  // MRs and QPs
};

inline Pd* to_pd(ibv_pd* pd) noexcept {
  return reinterpret_cast<Pd*>(pd);
}

}  // namespace vroce::core
