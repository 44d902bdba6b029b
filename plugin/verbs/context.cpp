// Opening and closing a verbs device: see context.h.
#include "verbs/context.h"

#include <cerrno>

#include "util/log.h"
#include "verbs/error.h"

namespace roce::verbs {

std::shared_ptr<Context> Context::open(std::shared_ptr<const ibv::Library> lib,
                                       ibv_device* device) {
  const char* raw_name = lib->fn().get_device_name(device);
  std::string name = raw_name != nullptr ? raw_name : "(unnamed device)";
  errno = 0;
  ibv_context* context = lib->fn().open_device(device);
  if (context == nullptr) {
    const int err = errno != 0 ? errno : EIO;
    throw VerbsError(
        fmt::format("cannot open device {}: ibv_open_device failed: {}; {}", name, errno_text(err),
                    err == EACCES || err == EPERM
                        ? "the process may not access /dev/infiniband (container "
                          "without the RDMA devices or without permission)"
                        : "check the device's driver and firmware (ibv_devinfo)"),
        err);
  }
  std::shared_ptr<Context> ctx(new Context(std::move(lib), context, std::move(name)));
  errno = 0;
  const int err = verbs_errno(ctx->lib_->fn().query_device(context, &ctx->device_attr_));
  if (err != 0) {
    throw VerbsError(fmt::format("cannot query device {}: ibv_query_device failed: {}", ctx->name_,
                                 errno_text(err)),
                     err);
  }
  return ctx;
}

Context::Context(std::shared_ptr<const ibv::Library> lib, ibv_context* context, std::string name)
    : lib_(std::move(lib)), context_(context), name_(std::move(name)) {}

Context::~Context() {
  errno = 0;
  const int err = verbs_errno(lib_->fn().close_device(context_));
  if (err != 0) {
    ROCE_WARN(NCCL_INIT, "dev {}: ibv_close_device failed: {}; objects created on it may leak",
              name_, errno_text(err));
  }
}

ibv::PortAttributes Context::query_port(uint8_t port) const {
  ibv::PortAttributes attrs{};
  const int err = ibv::query_port(*lib_, context_, port, &attrs);
  if (err != 0) {
    throw VerbsError(
        fmt::format("dev {} port {}: ibv_query_port failed: {}", name_, port, errno_text(err)),
        err);
  }
  return attrs;
}

}  // namespace roce::verbs
