// ibv_get_async_event / ibv_ack_async_event over the context's AsyncEventQueue.
#include <cerrno>

#include "abi/export.h"
#include "device/async_event_queue.h"
#include "device/context.h"

VROCE_EXPORT int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  if (context == nullptr || event == nullptr) {
    errno = EINVAL;
    return -1;
  }
  int rc = vroce::device::to_context(context)->async_events->get(event);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return 0;
}

VROCE_EXPORT void ibv_ack_async_event(ibv_async_event* event) {
  if (event == nullptr) {
    return;
  }
  // The event names its object, and the object its context; port and device events name no
  // object and need no acknowledgement bookkeeping (rdma-core does nothing for them either).
  ibv_context* context = nullptr;
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
      context = event->element.cq != nullptr ? event->element.cq->context : nullptr;
      break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      context = event->element.srq != nullptr ? event->element.srq->context : nullptr;
      break;
    case IBV_EVENT_WQ_FATAL:
      context = event->element.wq != nullptr ? event->element.wq->context : nullptr;
      break;
    default:
      if (vroce::device::AsyncEventQueue::object_of(*event) != nullptr) {
        context = event->element.qp->context;
      }
      break;
  }
  if (context != nullptr) {
    vroce::device::to_context(context)->async_events->ack(*event);
  }
}
