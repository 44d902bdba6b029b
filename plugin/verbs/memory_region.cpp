// Memory registration and deregistration: see memory_region.h.
#include "verbs/memory_region.h"

#include <cerrno>

#include "util/log.h"
#include "verbs/error.h"

namespace roce::verbs {
namespace {

std::string hint_for(int err) {
  switch (err) {
    case ENOMEM:
    case EAGAIN:
      return "; the locked-memory limit may be too low (ulimit -l unlimited, or "
             "LimitMEMLOCK=infinity for services and --ulimit memlock=-1 for containers)";
    case EFAULT:
      return "; the range is not mapped in this process, or it is GPU memory and neither "
             "nvidia-peermem nor dma-buf registration is available";
    case EOPNOTSUPP:
    case EPROTONOSUPPORT:
      return "; the device or driver does not support this kind of registration";
    default:
      return "";
  }
}

[[noreturn]] void fail(const ProtectionDomain& pd, const char* call, uint64_t addr, size_t length,
                       unsigned access, int err) {
  throw VerbsError(
      fmt::format("dev {}: {} of [0x{:x}, +{}) with access 0x{:x} failed: {}{}",
                  pd.context()->name(), call, addr, length, access, errno_text(err), hint_for(err)),
      err);
}

int last_errno() noexcept {
  return errno != 0 ? errno : EIO;
}

}  // namespace

std::unique_ptr<MemoryRegion> MemoryRegion::register_memory(std::shared_ptr<ProtectionDomain> pd,
                                                            void* addr, size_t length, int access) {
  errno = 0;
  ibv_mr* mr = pd->context()->lib().fn().reg_mr(pd->get(), addr, length, access);
  if (mr == nullptr) {
    fail(*pd, "ibv_reg_mr", reinterpret_cast<uintptr_t>(addr), length,
         static_cast<unsigned>(access), last_errno());
  }
  return std::unique_ptr<MemoryRegion>(new MemoryRegion(std::move(pd), mr));
}

std::unique_ptr<MemoryRegion> MemoryRegion::register_iova2(std::shared_ptr<ProtectionDomain> pd,
                                                           void* addr, size_t length, uint64_t iova,
                                                           unsigned access) {
  const auto reg = pd->context()->lib().fn().reg_mr_iova2;
  if (reg == nullptr) {
    throw VerbsError(fmt::format("dev {}: ibv_reg_mr_iova2 (IBVERBS_1.8) is not in {}; relaxed "
                                 "ordering needs an rdma-core that exports IBVERBS_1.8",
                                 pd->context()->name(), pd->context()->lib().resolved_path()),
                     ENOSYS);
  }
  errno = 0;
  ibv_mr* mr = reg(pd->get(), addr, length, iova, access);
  if (mr == nullptr) {
    fail(*pd, "ibv_reg_mr_iova2", reinterpret_cast<uintptr_t>(addr), length, access, last_errno());
  }
  return std::unique_ptr<MemoryRegion>(new MemoryRegion(std::move(pd), mr));
}

std::unique_ptr<MemoryRegion> MemoryRegion::register_dmabuf(std::shared_ptr<ProtectionDomain> pd,
                                                            uint64_t offset, size_t length,
                                                            uint64_t iova, int fd, int access) {
  const auto reg = pd->context()->lib().fn().reg_dmabuf_mr;
  if (reg == nullptr) {
    throw VerbsError(fmt::format("dev {}: ibv_reg_dmabuf_mr (IBVERBS_1.12) is not in {}; dma-buf "
                                 "registration needs an rdma-core that exports IBVERBS_1.12",
                                 pd->context()->name(), pd->context()->lib().resolved_path()),
                     ENOSYS);
  }
  errno = 0;
  ibv_mr* mr = reg(pd->get(), offset, length, iova, fd, access);
  if (mr == nullptr) {
    const int err = last_errno();
    throw VerbsError(
        fmt::format("dev {}: ibv_reg_dmabuf_mr of fd {} offset {} length {} at iova 0x{:x} with "
                    "access 0x{:x} failed: {}{}",
                    pd->context()->name(), fd, offset, length, iova, access, errno_text(err),
                    hint_for(err)),
        err);
  }
  return std::unique_ptr<MemoryRegion>(new MemoryRegion(std::move(pd), mr));
}

MemoryRegion::~MemoryRegion() {
  const uint32_t lkey = mr_->lkey;
  errno = 0;
  const int err = verbs_errno(pd_->context()->lib().fn().dereg_mr(mr_));
  if (err != 0) {
    ROCE_WARN(NCCL_NET, "dev {}: ibv_dereg_mr of lkey 0x{:x} failed: {}", pd_->context()->name(),
              lkey, errno_text(err));
  }
}

}  // namespace roce::verbs
