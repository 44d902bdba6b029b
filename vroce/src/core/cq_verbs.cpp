// Completion queues and completion channels as verbs: sizes within the device's max_cqe, CQs
// that refuse destruction while QPs use them, channels that refuse it while CQs use them, and
// completion events that must all be acknowledged before their CQ goes away.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "core/context_objects.h"
#include "core/cq.h"
#include "core/device_state.h"
#include "core/verbs.h"
#include "device/async_event_queue.h"
#include "device/context.h"
#include "device/device.h"
#include "stats/stats.h"
#include "util/log.h"

namespace vroce::core {

ibv_comp_channel* create_comp_channel(ibv_context* context) {
  if (context == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  auto* channel = new (std::nothrow) CompChannel;
  if (channel == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (fd < 0) {
    int err = errno;
    delete channel;
    errno = err;
    return nullptr;
  }
  channel->ibv.context = context;
  channel->ibv.fd = fd;
  channel->ibv.refcnt = 0;
  channel->ctx = device::to_context(context);
  track_context_object(channel->ctx, ContextObject::CompChannel, &channel->ibv);
  stats().live_comp_channels.inc();
  return &channel->ibv;
}

int destroy_comp_channel(ibv_comp_channel* ibv) {
  if (ibv == nullptr) {
    return EINVAL;
  }
  CompChannel* channel = to_channel(ibv);
  if (channel->cqs.load(std::memory_order_acquire) != 0) {
    VROCE_LOG(Warn, "ibv_destroy_comp_channel: %u CQs still use this channel; destroy them first",
              channel->cqs.load(std::memory_order_relaxed));
    return EBUSY;
  }
  ::close(ibv->fd);
  untrack_context_object(channel->ctx, ContextObject::CompChannel, ibv);
  stats().live_comp_channels.dec();
  delete channel;
  return 0;
}

ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) {
  if (context == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  device::Context* ctx = device::to_context(context);
  int max_cqe = ctx->device->device_attr().max_cqe;
  if (cqe < 1 || cqe > max_cqe) {
    VROCE_LOG(Warn, "ibv_create_cq: cqe %d is outside 1..%d (the device's max_cqe)", cqe, max_cqe);
    errno = EINVAL;
    return nullptr;
  }
  if (comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
    VROCE_LOG(Warn, "ibv_create_cq: comp_vector %d is outside 0..%d", comp_vector,
              context->num_comp_vectors - 1);
    errno = EINVAL;
    return nullptr;
  }
  if (channel != nullptr && channel->context != context) {
    VROCE_LOG(Warn, "ibv_create_cq: the completion channel belongs to another context");
    errno = EINVAL;
    return nullptr;
  }
  auto* cq = new (std::nothrow) Cq;
  if (cq == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  int rc = cq->resize(cqe);
  if (rc != 0) {
    delete cq;
    errno = rc;
    return nullptr;
  }
  cq->ibv.context = context;
  cq->ibv.channel = channel;
  cq->ibv.cq_context = cq_context;
  static std::atomic<uint32_t> next_handle{1};
  cq->ibv.handle = next_handle.fetch_add(1, std::memory_order_relaxed);
  pthread_mutex_init(&cq->ibv.mutex, nullptr);
  pthread_cond_init(&cq->ibv.cond, nullptr);
  cq->ctx = ctx;
  cq->device = &DeviceState::of(*ctx->device);
  if (channel != nullptr) {
    cq->channel = to_channel(channel);
    cq->channel->cqs.fetch_add(1, std::memory_order_relaxed);
    ++channel->refcnt;
  }
  track_context_object(ctx, ContextObject::Cq, &cq->ibv);
  stats().live_cqs.inc();
  return &cq->ibv;
}

int resize_cq(ibv_cq* ibv, int cqe) {
  if (ibv == nullptr) {
    return EINVAL;
  }
  Cq* cq = to_cq(ibv);
  if (cqe < 1 || cqe > cq->ctx->device->device_attr().max_cqe) {
    return EINVAL;
  }
  return cq->resize(cqe);
}

int destroy_cq(ibv_cq* ibv) {
  if (ibv == nullptr) {
    return EINVAL;
  }
  Cq* cq = to_cq(ibv);
  if (cq->qps.load(std::memory_order_acquire) != 0) {
    VROCE_LOG(Warn, "ibv_destroy_cq: %u QPs still use this CQ; destroy them first",
              cq->qps.load(std::memory_order_relaxed));
    return EBUSY;
  }
  if (cq->channel != nullptr) {
    cq->channel->discard(cq);
  }
  // Every completion event handed out must be acknowledged before the CQ goes (rdma-core).
  pthread_mutex_lock(&ibv->mutex);
  while (ibv->comp_events_completed != cq->events_delivered) {
    pthread_cond_wait(&ibv->cond, &ibv->mutex);
  }
  pthread_mutex_unlock(&ibv->mutex);
  cq->ctx->async_events->retire(ibv);
  if (cq->channel != nullptr) {
    cq->channel->cqs.fetch_sub(1, std::memory_order_relaxed);
    --cq->channel->ibv.refcnt;
  }
  untrack_context_object(cq->ctx, ContextObject::Cq, ibv);
  stats().live_cqs.dec();
  pthread_cond_destroy(&ibv->cond);
  pthread_mutex_destroy(&ibv->mutex);
  delete cq;
  return 0;
}

int get_cq_event(ibv_comp_channel* ibv, ibv_cq** cq_out, void** cq_context) {
  if (ibv == nullptr || cq_out == nullptr || cq_context == nullptr) {
    errno = EINVAL;
    return -1;
  }
  Cq* cq = nullptr;
  if (to_channel(ibv)->get(&cq) != 0) {
    return -1;
  }
  *cq_out = &cq->ibv;
  *cq_context = cq->ibv.cq_context;
  return 0;
}

void ack_cq_events(ibv_cq* ibv, unsigned int nevents) {
  if (ibv == nullptr) {
    return;
  }
  pthread_mutex_lock(&ibv->mutex);
  ibv->comp_events_completed += nevents;
  pthread_cond_signal(&ibv->cond);
  pthread_mutex_unlock(&ibv->mutex);
}

}  // namespace vroce::core
