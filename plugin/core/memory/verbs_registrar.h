// The MR cache's registrar over verbs: host and CUDA ranges through ibv_reg_mr, or through
// ibv_reg_mr_iova2 with IBV_ACCESS_RELAXED_ORDERING when relaxed ordering is on; dma-buf ranges
// through ibv_reg_dmabuf_mr with iova = the virtual address, so RDMA addresses stay virtual.
// Access: local write, remote write, remote read (no atomics: the data path uses none).
#pragma once

#include <memory>

#include "core/memory/mr_cache.h"
#include "verbs/protection_domain.h"

namespace roce {

class VerbsRegistrar : public Registrar {
 public:
  VerbsRegistrar(std::shared_ptr<verbs::ProtectionDomain> pd, bool relaxed_ordering);
  // Throws verbs::VerbsError.
  Registration register_region(const RegionRequest& request) override;

  static constexpr int kAccess =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

 private:
  std::shared_ptr<verbs::ProtectionDomain> pd_;
  bool relaxed_ordering_;
};

}  // namespace roce
