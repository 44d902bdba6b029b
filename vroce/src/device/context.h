// The object behind every ibv_context vroce hands out. Users hold &vctx.context; vroce gets back
// to the Context with to_context(). verbs_context places the public ibv_context at its end and
// grows its extended ops upward, so the whole verbs_context must be embedded, not just ibv_context.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <memory>

namespace vroce::device {

class Device;
class AsyncEventQueue;  // device/async_event_queue.h

struct Context {
  verbs_context vctx{};
  Device* device = nullptr;  // process-lifetime, never null once opened
  std::unique_ptr<AsyncEventQueue> async_events;
};

// Context is not standard-layout (std::unique_ptr's members sit in base classes), where offsetof
// is only conditionally supported; GCC and clang support it for every type without a virtual
// base, which Context has none of. GCC does not warn through the system header's macro; clang does.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
inline Context* to_context(ibv_context* ctx) noexcept {
  auto* vctx = reinterpret_cast<verbs_context*>(reinterpret_cast<char*>(ctx) -
                                                offsetof(verbs_context, context));
  return reinterpret_cast<Context*>(reinterpret_cast<char*>(vctx) - offsetof(Context, vctx));
}
#pragma GCC diagnostic pop

}  // namespace vroce::device
