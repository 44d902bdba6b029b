// Asynchronous events of one context (ibv_get_async_event / ibv_ack_async_event). Backed by an
// eventfd that is the context's async_fd, so applications can poll it and NCCL-style event threads
// can block in ibv_get_async_event.
#pragma once

#include <infiniband/verbs.h>

namespace vroce::device {

struct Context;

// Queue an event for the context's owner (QP fatal, CQ error, port state, ...). Thread-safe;
// callable from the progress thread.
void raise_async_event(Context& ctx, const ibv_async_event& event);

}  // namespace vroce::device
