// ibv_open_device / ibv_close_device: the Context behind every ibv_context vroce hands out.
//
// The ibv_context is the last member of a verbs_context whose abi_compat marks it extended, so
// the header-inline verbs that go through verbs_get_ctx_op work in programs that only dlopen
// the library: ibv_query_port (the full 52-byte struct through query_port) and
// ibv_query_device_ex (query_device_ex). The data-path entries of the ops table come from the
// RC engine (install_data_path_ops). Extended ops left NULL make their inline wrappers report
// EOPNOTSUPP/ENOSYS, which is true: vroce has no XRC, flow steering, WQs, counters, device
// memory, TDs or parent domains.
#include "device/context.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "abi/device_registry.h"
#include "abi/export.h"
#include "abi/query_ops.h"
#include "core/context_objects.h"
#include "core/verbs.h"
#include "device/async_event_queue.h"
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

// ibv_create_qp_ex reaches this only for attributes beyond a PD (its inline calls ibv_create_qp
// otherwise). A plain RC QP described the extended way is created; the ibv_qp_ex work-request
// API (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) and the rest are refused, saying so, where the NULL op
// used to fail silently with EOPNOTSUPP (perftest on VROCE_IDENTITY=connectx7 asks for it).
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  uint64_t mask = attr->comp_mask;
  bool plain = (mask & ~uint64_t{IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS}) == 0 &&
               ((mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) == 0 || attr->create_flags == 0);
  if (!plain) {
    const char* what = (mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0
                           ? "the ibv_qp_ex work-request API (ibv_wr_*) is not implemented; post "
                             "with ibv_post_send (perftest: --use_old_post_send)"
                           : "only a PD may be given (no create flags, TSO, RSS, XRC or parent "
                             "domains)";
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      VROCE_LOG(Warn, "ibv_create_qp_ex (comp_mask 0x%llx): %s",
                static_cast<unsigned long long>(mask), what);
    }
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (attr->pd == nullptr || attr->pd->context != context) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_qp_init_attr init{};
  init.qp_context = attr->qp_context;
  init.send_cq = attr->send_cq;
  init.recv_cq = attr->recv_cq;
  init.srq = attr->srq;
  init.cap = attr->cap;
  init.qp_type = attr->qp_type;
  init.sq_sig_all = attr->sq_sig_all;
  ibv_qp* qp = ibv_create_qp(attr->pd, &init);
  if (qp != nullptr) {
    attr->cap = init.cap;
  }
  return qp;
}

}  // namespace

VROCE_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
  vroce::device::Device* dev = vroce::abi::device_from_ibv(device);
  if (dev == nullptr) {
    errno = EINVAL;  // not a device from ibv_get_device_list
    return nullptr;
  }
  try {
    auto created = vroce::device::AsyncEventQueue::create();
    if (!created) {
      VROCE_LOG(Error, "cannot open %s: %s", dev->name().c_str(), created.error().c_str());
      errno = EMFILE;
      return nullptr;
    }
    std::unique_ptr<vroce::device::AsyncEventQueue> events = std::move(*created);
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

    auto ctx = std::make_unique<vroce::device::Context>();
    ctx->device = dev;
    ctx->async_events = std::move(events);
    verbs_context& vctx = ctx->vctx;
    vctx.sz = sizeof(verbs_context);
    vctx.query_port = vroce::abi::query_port;
    vctx.query_device_ex = vroce::abi::query_device_ex;
    vctx.create_qp_ex = create_qp_ex;
    ibv_context& context = vctx.context;
    context.device = device;
    vroce::core::install_data_path_ops(context.ops);
    context.ops._compat_query_device = compat_query_device;
    context.ops._compat_query_port = compat_query_port;
    context.cmd_fd = cmd_fd;
    context.async_fd = ctx->async_events->fd();
    context.num_comp_vectors = vroce::device::limits::kNumCompVectors;
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
  vroce::device::Context* ctx = vroce::device::to_context(context);
  // rdma-core returns 0 here whatever is left, and the kernel reclaims a closed context's
  // objects; perftest's ib_send_bw, for one, never destroys its receive CQ.
  std::string leaked = vroce::core::release_context_objects(*ctx);
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
