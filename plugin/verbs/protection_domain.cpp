// Protection domain lifetime: see protection_domain.h.
#include "verbs/protection_domain.h"

#include <cerrno>

#include "util/log.h"
#include "verbs/error.h"

namespace roce::verbs {

std::shared_ptr<ProtectionDomain> ProtectionDomain::create(std::shared_ptr<Context> context) {
  errno = 0;
  ibv_pd* pd = context->lib().fn().alloc_pd(context->get());
  if (pd == nullptr) {
    const int err = errno != 0 ? errno : ENOMEM;
    throw VerbsError(
        fmt::format("dev {}: ibv_alloc_pd failed: {}", context->name(), errno_text(err)), err);
  }
  return std::shared_ptr<ProtectionDomain>(new ProtectionDomain(std::move(context), pd));
}

ProtectionDomain::~ProtectionDomain() {
  errno = 0;
  const int err = verbs_errno(context_->lib().fn().dealloc_pd(pd_));
  if (err != 0) {
    // EBUSY means a QP or MR of this PD was leaked past its owner: a bug to report, not to hide.
    ROCE_WARN(NCCL_NET, "dev {}: ibv_dealloc_pd failed: {}{}", context_->name(), errno_text(err),
              err == EBUSY ? "; memory regions or queue pairs of this domain are still alive" : "");
  }
}

}  // namespace roce::verbs
