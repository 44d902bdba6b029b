// ibv_open_device / ibv_close_device: the Context behind every ibv_context vroce hands out.
//
// The ibv_context is the last member of a verbs_context whose abi_compat marks it extended, so
// the header-inline verbs that go through verbs_get_ctx_op work in programs that only dlopen
// the library: ibv_query_port (the full 52-byte struct through query_port) and
// ibv_query_device_ex (query_device_ex). The data-path entries of the ops table come from the
// RC engine (install_data_path_ops). Extended ops left NULL make their inline wrappers report
// EOPNOTSUPP/ENOSYS, which is true: vroce has no XRC, flow steering, WQs, counters, device
// memory, TDs or parent domains.
#include "core/context.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "abi/export.h"
#include "abi/query_ops.h"
#include "core/async_event_queue.h"
#include "core/context_objects.h"
#include "device/device.h"
#include "device/limits.h"
#include "util/log.h"

namespace {

int compat_query_device(ibv_context* context, ibv_device_attr* attr) {
  return vroce::abi::query_device(context, attr);
}

int compat_query_port(ibv_context* context, uint8_t port_num, _compat_ibv_port_attr* attr) {
  return vroce::abi::query_port(context, port_num, reinterpret_cast<ibv_port_attr*>(attr),
                                offsetof(ibv_port_attr, port_cap_flags2));
}

}  // namespace

VROCE_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
  vroce::Device* dev = vroce::device_from_ibv(device);
  if (dev == nullptr) {
    errno = EINVAL;  // not a device from ibv_get_device_list
    return nullptr;
  }
  try {
    std::string error;
    std::unique_ptr<vroce::AsyncEventQueue> events = vroce::AsyncEventQueue::create(&error);
    if (!events) {
      VROCE_LOG(Error, "cannot open %s: %s", dev->name().c_str(), error.c_str());
      errno = EMFILE;
      return nullptr;
    }
    // There is no kernel command channel; cmd_fd is an open descriptor of /dev/null so that
    // programs that fcntl/dup/close it see a valid descriptor.
    int cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (cmd_fd < 0) {
      int saved = errno;
      VROCE_LOG(Error, "cannot open %s: no descriptor for cmd_fd: %s", dev->name().c_str(),
                std::strerror(saved));
      errno = saved;
      return nullptr;
    }

    auto ctx = std::make_unique<vroce::Context>();
    ctx->device = dev;
    ctx->async_events = std::move(events);
    verbs_context& vctx = ctx->vctx;
    vctx.sz = sizeof(verbs_context);
    vctx.query_port = vroce::abi::query_port;
    vctx.query_device_ex = vroce::abi::query_device_ex;
    ibv_context& context = vctx.context;
    context.device = device;
    vroce::install_data_path_ops(context.ops);
    context.ops._compat_query_device = compat_query_device;
    context.ops._compat_query_port = compat_query_port;
    context.cmd_fd = cmd_fd;
    context.async_fd = ctx->async_events->fd();
    context.num_comp_vectors = vroce::limits::kNumCompVectors;
    pthread_mutex_init(&context.mutex, nullptr);
    context.abi_compat = reinterpret_cast<void*>(UINTPTR_MAX);  // __VERBS_ABI_IS_EXTENDED
    dev->refresh_netdev_mtu();
    dev->attach_context(ctx.get());
    return &ctx.release()->vctx.context;
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return nullptr;
  }
}

VROCE_EXPORT int ibv_close_device(ibv_context* context) {
  if (context == nullptr) {
    errno = EINVAL;
    return -1;
  }
  vroce::Context* ctx = vroce::to_context(context);
  // rdma-core returns 0 here whatever is left, and the kernel reclaims a closed context's
  // objects; perftest's ib_send_bw, for one, never destroys its receive CQ.
  std::string leaked = vroce::release_context_objects(*ctx);
  if (!leaked.empty()) {
    VROCE_LOG(Warn, "ibv_close_device(%s): released what the program did not destroy: %s",
              ctx->device->name().c_str(), leaked.c_str());
  }
  ctx->device->detach_context(ctx);
  close(context->cmd_fd);
  pthread_mutex_destroy(&context->mutex);
  delete ctx;
  return 0;
}
