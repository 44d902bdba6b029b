// A protection domain (ibv_pd). Memory regions and queue pairs created in it hold it, and it
// holds its Context.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "verbs/context.h"

namespace roce::verbs {

class ProtectionDomain {
 public:
  // Throws VerbsError naming the device and errno.
  static std::shared_ptr<ProtectionDomain> create(std::shared_ptr<Context> context);
  ~ProtectionDomain();
  ProtectionDomain(const ProtectionDomain&) = delete;
  ProtectionDomain& operator=(const ProtectionDomain&) = delete;

  ibv_pd* get() const noexcept { return pd_; }
  const std::shared_ptr<Context>& context() const noexcept { return context_; }

 private:
  ProtectionDomain(std::shared_ptr<Context> context, ibv_pd* pd)
      : context_(std::move(context)), pd_(pd) {}

  std::shared_ptr<Context> context_;
  ibv_pd* pd_;
};

}  // namespace roce::verbs
