// raise_async_event: the one way the rest of vroce reports an asynchronous event.
#include "device/async_events.h"

#include "device/async_event_queue.h"
#include "device/context.h"

namespace vroce::device {

void raise_async_event(Context& ctx, const ibv_async_event& event) {
  ctx.async_events->push(event);
}

}  // namespace vroce::device
