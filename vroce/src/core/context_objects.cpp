#include "core/context_objects.h"

#include <infiniband/verbs.h>
#include <pthread.h>

#include <array>
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/cq.h"
#include "core/verbs.h"
#include "device/async_event_queue.h"
#include "device/context.h"
#include "util/log.h"

namespace vroce::core {
namespace {

constexpr size_t kKinds = 5;

struct Owned {
  // Insertion order is kept so that objects are released in the order the program made them.
  std::array<std::vector<void*>, kKinds> objects;
};

std::mutex& owned_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Never destroyed: contexts may be closed from atexit handlers after static teardown began.
std::unordered_map<const device::Context*, Owned>& owned() {
  static auto* map = new std::unordered_map<const device::Context*, Owned>();
  return *map;
}

const char* kind_name(ContextObject kind, size_t count) {
  bool many = count != 1;
  switch (kind) {
    case ContextObject::Qp:
      return many ? "QPs" : "QP";
    case ContextObject::Mr:
      return many ? "MRs" : "MR";
    case ContextObject::Cq:
      return many ? "CQs" : "CQ";
    case ContextObject::CompChannel:
      return many ? "completion channels" : "completion channel";
    case ContextObject::Pd:
      return many ? "PDs" : "PD";
  }
  return "objects";
}

void describe(std::string* out, ContextObject kind, const std::vector<void*>& objects) {
  if (objects.empty()) {
    return;
  }
  if (!out->empty()) {
    *out += ", ";
  }
  *out += std::to_string(objects.size()) + " " + kind_name(kind, objects.size());
  if (kind == ContextObject::Qp) {
    *out += " (qpn";
    size_t shown = 0;
    for (void* object : objects) {
      if (shown++ == 8) {
        *out += " ...";
        break;
      }
      char qpn[16];
      std::snprintf(qpn, sizeof(qpn), " 0x%x", static_cast<ibv_qp*>(object)->qp_num);
      *out += qpn;
    }
    *out += ")";
  }
}

void release(ContextObject kind, void* object) {
  int rc = 0;
  switch (kind) {
    case ContextObject::Qp:
      rc = destroy_qp(static_cast<ibv_qp*>(object));
      break;
    case ContextObject::Mr:
      rc = dereg_mr(static_cast<ibv_mr*>(object));
      break;
    case ContextObject::Cq: {
      // Completion events the program took and never acknowledged cannot be acknowledged any
      // more; destroy_cq would wait for them forever.
      auto* ibv = static_cast<ibv_cq*>(object);
      pthread_mutex_lock(&ibv->mutex);
      ibv->comp_events_completed = to_cq(ibv)->events_delivered;
      pthread_mutex_unlock(&ibv->mutex);
      rc = destroy_cq(ibv);
      break;
    }
    case ContextObject::CompChannel:
      rc = destroy_comp_channel(static_cast<ibv_comp_channel*>(object));
      break;
    case ContextObject::Pd:
      rc = dealloc_pd(static_cast<ibv_pd*>(object));
      break;
  }
  if (rc != 0) {
    // Children are released first, so only a bug gets here; the object is leaked, not freed
    // while in use.
    VROCE_LOG(Error, "ibv_close_device: releasing a leaked %s failed (errno %d; a vroce bug)",
              kind_name(kind, 1), rc);
  }
}

}  // namespace

void track_context_object(const device::Context* ctx, ContextObject kind, void* object) {
  std::lock_guard lock(owned_mutex());
  owned()[ctx].objects[static_cast<size_t>(kind)].push_back(object);
}

void untrack_context_object(const device::Context* ctx, ContextObject kind, void* object) {
  std::lock_guard lock(owned_mutex());
  auto& map = owned();
  auto it = map.find(ctx);
  if (it == map.end()) {
    return;
  }
  std::erase(it->second.objects[static_cast<size_t>(kind)], object);
  for (const auto& list : it->second.objects) {
    if (!list.empty()) {
      return;
    }
  }
  map.erase(it);
}

std::string release_context_objects(device::Context& ctx) {
  Owned left;
  {
    std::lock_guard lock(owned_mutex());
    auto& map = owned();
    auto it = map.find(&ctx);
    if (it == map.end()) {
      return {};
    }
    left = it->second;
  }
  static constexpr std::array<ContextObject, kKinds> kOrder = {
      ContextObject::Qp, ContextObject::Mr, ContextObject::Cq, ContextObject::CompChannel,
      ContextObject::Pd};
  std::string what;
  for (ContextObject kind : kOrder) {
    describe(&what, kind, left.objects[static_cast<size_t>(kind)]);
  }
  // Async events of the context's objects that were delivered and never acknowledged.
  ctx.async_events->abandon_acks();
  for (ContextObject kind : kOrder) {
    for (void* object : left.objects[static_cast<size_t>(kind)]) {
      release(kind, object);  // each destroy untracks its object
    }
  }
  return what;
}

}  // namespace vroce::core
