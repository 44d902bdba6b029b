// The version-neutral entry points (core/api.h): plugin setup, properties, memory registration,
// the data path and comm teardown. Connection setup (listen, connect, accept) is in
// api_connect.cpp.
#include "core/api.h"

#include <algorithm>
#include <array>
#include <mutex>
#include <set>
#include <span>
#include <string>

#include "core/comm.h"
#include "core/datapath/api_data_path.h"
#include "core/datapath/data_path_limits.h"
#include "core/datapath/recv_comm.h"
#include "core/datapath/request.h"
#include "core/datapath/send_comm.h"
#include "core/memory/mr_handle.h"
#include "core/plugin.h"
#include "telemetry/profiler_events.h"
#include "util/config.h"
#include "util/log.h"

namespace roce::api {
namespace {

// A v11 context: the communicator's traffic class and the hints setNetAttr gave.
struct CommContext {
  uint64_t comm_id = 0;
  int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
  bool has_attr = false;
  ncclNetAttr_v11_t attr{};
};

// Live contexts, so finalize/listen/connect never dereference a pointer that is not one.
std::mutex g_contexts_mutex;
std::set<const void*> g_contexts;

CommContext* find_context(void* ctx) {
  const std::lock_guard lock(g_contexts_mutex);
  return g_contexts.count(ctx) != 0 ? static_cast<CommContext*>(ctx) : nullptr;
}

ncclResult_t not_a(const char* entry, const char* what, const void* handle) noexcept {
  ROCE_WARN(NCCL_NET,
            "{}: {} is not a live RoCE {}; it was closed already or belongs to another "
            "plugin",
            entry, fmt::ptr(handle), what);
  return ncclInvalidArgument;
}

// Memory handles are checked on their own (they come from regMr on any comm of the device).
MrHandle* as_mr(void* mhandle) {
  if (mhandle == nullptr || !recycled::is_live(mhandle)) {
    return nullptr;
  }
  auto* mh = static_cast<MrHandle*>(mhandle);
  return mh->valid() ? mh : nullptr;
}

// Registers on every member of the comm's NIC (one for a port) with `acquire(member's cache)`,
// and hands out one handle holding each member's keys. A member that fails gives back what the
// earlier ones acquired before the error goes on.
template <typename Acquire>
ncclResult_t register_region([[maybe_unused]] const char* entry, Comm& comm, Acquire acquire,
                             void** mhandle) {
  auto& connected = static_cast<ConnectedComm&>(comm);  // registration_comm: send or recv
  const auto& members = connected.members();
  std::array<const CachedRegion*, MrHandle::kMaxMembers> regions{};
  size_t acquired = 0;
  try {
    for (; acquired < members.size(); ++acquired) {
      regions[acquired] = acquire(members[acquired]->mr_cache());
    }
  } catch (...) {
    for (size_t m = 0; m < acquired; ++m) {
      members[m]->mr_cache().release(regions[m]);
    }
    throw;
  }
  const CachedRegion* region = regions[0];
  auto* mh = new MrHandle;
  mh->lkey = region->lkey;
  mh->rkey = region->rkey;
  mh->addr = region->addr;
  mh->length = region->length;
  mh->kind = region->kind;
  mh->device = &comm.device();
  mh->region = region;
  mh->device_id = connected.device_id();
  mh->member_count = static_cast<uint8_t>(members.size());
  for (size_t m = 0; m < members.size(); ++m) {
    mh->lkeys[m] = regions[m]->lkey;
    mh->rkeys[m] = regions[m]->rkey;
    mh->regions[m] = regions[m];
    mh->devices[m] = members[m].get();
  }
  *mhandle = mh;
  ROCE_TRACE(NCCL_NET, "{}: [0x{:x}, +{}) lkey 0x{:x} rkey 0x{:x}", entry, mh->addr, mh->length,
             mh->lkey, mh->rkey);
  return ncclSuccess;
}

// A receive comm keeps what was registered on it until its first irecv: the evidence of the
// GPUDirect downgrade check (core/memory/gdr_staging.h). Send comms are never judged.
void note_registration(Comm& comm, bool device_memory, const void* data, size_t size) {
  if (comm.kind() == CommKind::Recv) {
    static_cast<RecvComm&>(comm).note_registration(device_memory, reinterpret_cast<uintptr_t>(data),
                                                   size);
  }
}

Comm* registration_comm(const char* entry, void* handle) {
  Comm* comm = Comm::from_any_handle(handle);
  if (comm == nullptr || comm->kind() == CommKind::Listen) {
    not_a(entry, "send or recv comm", handle);
    return nullptr;
  }
  return comm;
}

}  // namespace

ncclResult_t init(ncclDebugLogger_t logger) {
  return Plugin::instance().init(logger);
}

ncclResult_t finalize() {
  if (Plugin::instance().finalize()) {
    abandon_connect_attempts();
  }
  return ncclSuccess;
}

ncclResult_t init_context(ncclDebugLogger_t logger, uint64_t comm_id, int traffic_class,
                          void** ctx) {
  if (traffic_class != NCCL_NET_TRAFFIC_CLASS_UNDEF && (traffic_class < 0 || traffic_class > 255)) {
    ROCE_WARN(NCCL_INIT | NCCL_NET,
              "init: communicator 0x{:x} asks for traffic class {}, outside 0..255; set "
              "ncclConfig_t.trafficClass to a valid IP TOS value",
              comm_id, traffic_class);
    return ncclInvalidArgument;
  }
  if (ncclResult_t r = Plugin::instance().init(logger); r != ncclSuccess) {
    return r;
  }
  auto* context = new CommContext;
  context->comm_id = comm_id;
  context->traffic_class = traffic_class;
  {
    const std::lock_guard lock(g_contexts_mutex);
    g_contexts.insert(context);
  }
  *ctx = context;
  return ncclSuccess;
}

ncclResult_t finalize_context(void* ctx) {
  {
    const std::lock_guard lock(g_contexts_mutex);
    if (g_contexts.erase(ctx) == 0) {
      return not_a("finalize", "context", ctx);
    }
  }
  delete static_cast<CommContext*>(ctx);
  return finalize();
}

ncclResult_t set_net_attr(void* ctx, const ncclNetAttr_v11_t& attr) {
  CommContext* context = find_context(ctx);
  if (context == nullptr) {
    return not_a("setNetAttr", "context", ctx);
  }
  // Hints only: one connection per QP set is what we run; recorded for logs.
  context->attr = attr;
  context->has_attr = true;
  ROCE_TRACE(NCCL_NET, "setNetAttr: communicator 0x{:x} op {} algo {} proto {}", context->comm_id,
             attr.op, attr.algo, attr.proto);
  return ncclSuccess;
}

int context_traffic_class(void* ctx) {
  CommContext* context = find_context(ctx);
  if (context == nullptr) {
    throw std::invalid_argument(fmt::format("{} is not a context returned by init", fmt::ptr(ctx)));
  }
  return context->traffic_class;
}

ncclResult_t devices(int* ndev) {
  if (!Plugin::instance().initialized()) {
    ROCE_WARN(NCCL_NET, "devices: called before a successful init");
    return ncclInvalidUsage;
  }
  *ndev = Plugin::instance().device_count();
  return ncclSuccess;
}

namespace {

// The properties of one physical device (port).
void physical_properties(int dev, const DeviceRuntime& device, Properties* props) {
  const PluginDevice& info = device.info();
  props->name = info.name.c_str();
  // Folded as net_ib folds it (NCCL_IB_MERGE_NICS), so NCCL fuses the ports of one card.
  props->pci_path = info.reported_pci_path ? info.reported_pci_path->c_str() : nullptr;
  props->guid = info.guid;
  props->ptr_support = device.gdr().ptr_support();
  props->reg_is_global = 1;
  props->force_flush = 0;
  props->speed = info.speed_mbps;
  props->port = info.port + info.real_port;  // as net_ib: distinct for each PCI function
  props->latency = 0;
  props->max_comms = info.max_comms;
  props->max_recvs = kMaxRecvs;
  props->device_type = NCCL_NET_DEVICE_HOST;
  props->device_version = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vprops.ndevs = 1;
  props->vprops.devs[0] = dev;
  props->max_p2p_bytes = kMaxMessageBytes;
  props->max_coll_bytes = kMaxMessageBytes;
  props->max_multi_request_size = 1;
  props->rail_id = info.rail_id;
  props->plane_id = info.plane_id;
}

// A virtual NIC's names ("mlx5_0+mlx5_1"), kept for the process: NCCL holds the name pointer
// that getProperties gives it for as long as it likes.
const char* virtual_name(const std::string& joined) {
  static std::mutex mutex;
  static std::set<std::string> names;
  const std::lock_guard lock(mutex);
  return names.insert(joined).first->c_str();
}

}  // namespace

ncclResult_t get_properties(int dev, Properties* props) {
  const std::vector<int> members = Plugin::instance().members_of(dev);
  if (members.empty()) {
    ROCE_WARN(NCCL_NET, "getProperties: device {} does not exist ({} devices)", dev,
              Plugin::instance().device_count());
    return ncclInvalidArgument;
  }
  std::shared_ptr<DeviceRuntime> first = Plugin::instance().device(members.front());
  if (first == nullptr) {
    return ncclInvalidArgument;  // finalized meanwhile
  }
  physical_properties(members.front(), *first, props);
  if (members.size() == 1) {
    return ncclSuccess;
  }
  // A virtual NIC: what NCCL expects of a fused one (net_ib's rules): the first member's path,
  // guid and port; the sum of the speeds; the worst latency; the least of each limit; what
  // every member supports; the rail and plane when all members share them.
  std::string name = props->name;
  props->vprops.ndevs = static_cast<int>(members.size());
  for (size_t i = 1; i < members.size(); ++i) {
    std::shared_ptr<DeviceRuntime> device = Plugin::instance().device(members[i]);
    if (device == nullptr) {
      return ncclInvalidArgument;
    }
    Properties member;
    physical_properties(members[i], *device, &member);
    name += "+" + std::string(member.name);
    props->speed += member.speed;
    props->latency = std::max(props->latency, member.latency);
    props->max_comms = std::min(props->max_comms, member.max_comms);
    props->max_recvs = std::min(props->max_recvs, member.max_recvs);
    props->ptr_support &= member.ptr_support;
    props->max_p2p_bytes = std::min(props->max_p2p_bytes, member.max_p2p_bytes);
    props->max_coll_bytes = std::min(props->max_coll_bytes, member.max_coll_bytes);
    if (member.rail_id != props->rail_id) {
      props->rail_id = NCCL_NET_ID_UNDEF;
    }
    if (member.plane_id != props->plane_id) {
      props->plane_id = NCCL_NET_ID_UNDEF;
    }
  }
  for (size_t i = 0; i < members.size(); ++i) {
    props->vprops.devs[i] = members[i];
  }
  props->name = virtual_name(name);
  return ncclSuccess;
}

ncclResult_t make_vdevice(int* d, const VDeviceMembers& props) {
  const int count = Plugin::instance().physical_device_count();
  for (int i = 0; i < props.ndevs; ++i) {
    if (props.devs[i] < 0 || props.devs[i] >= count) {
      ROCE_WARN(NCCL_NET,
                "makeVDevice: member {} is device {}, which is not one of the {} physical devices",
                i, props.devs[i], count);
      return ncclInvalidArgument;
    }
  }
  if (props.ndevs == 1) {
    *d = props.devs[0];  // a single-member virtual NIC is the device itself
    return ncclSuccess;
  }
  if (!config().merge_nics) {
    ROCE_WARN(NCCL_NET | NCCL_INIT,
              "makeVDevice: merging {} devices into one virtual NIC is turned off by "
              "NCCL_IB_MERGE_NICS=0; unset it to fuse, or set NCCL_NET_MERGE_LEVEL=LOC (and no "
              "NCCL_NET_FORCE_MERGE) so that NCCL does not ask",
              props.ndevs);
    return ncclInvalidUsage;
  }
  const Result<int> made = Plugin::instance().add_virtual_device(
      std::span<const int>(props.devs, static_cast<size_t>(props.ndevs)));
  if (!made) {
    ROCE_WARN(NCCL_NET | NCCL_INIT, "makeVDevice: cannot merge {} devices: {}", props.ndevs,
              made.error());
    return ncclInvalidArgument;
  }
  *d = *made;
  ROCE_INFO(NCCL_NET | NCCL_INIT, "makeVDevice: virtual NIC {} of {} devices", *d, props.ndevs);
  return ncclSuccess;
}

ncclResult_t reg_mr(void* handle, void* data, size_t size, int type, void** mhandle) {
  Comm* comm = registration_comm("regMr", handle);
  if (comm == nullptr) {
    return ncclInvalidArgument;
  }
  MemoryKind kind = MemoryKind::Host;
  if (type == NCCL_PTR_CUDA) {
    if (!comm->device().gdr().cuda_pointers()) {
      ROCE_WARN(NCCL_NET,
                "regMr: CUDA memory on {} but GPUDirect RDMA for CUDA pointers is not available "
                "({}); load nvidia-peermem, or use dma-buf registration (NCCL_DMABUF_ENABLE=1)",
                comm->device().name(), comm->device().gdr().checked);
      return ncclInvalidUsage;
    }
    kind = MemoryKind::Cuda;
  }
  const ncclResult_t result = register_region(
      "regMr", *comm,
      [&](MrCache& cache) { return cache.acquire(reinterpret_cast<uintptr_t>(data), size, kind); },
      mhandle);
  note_registration(*comm, kind == MemoryKind::Cuda, data, size);
  return result;
}

ncclResult_t reg_mr_dmabuf(void* handle, void* data, size_t size, int type, uint64_t offset, int fd,
                           void** mhandle) {
  Comm* comm = registration_comm("regMrDmaBuf", handle);
  if (comm == nullptr) {
    return ncclInvalidArgument;
  }
  if (!comm->device().gdr().dmabuf) {
    ROCE_WARN(NCCL_NET,
              "regMrDmaBuf: dma-buf registration is not available on {} ({}); NCCL only calls "
              "this when ptrSupport has NCCL_PTR_DMABUF",
              comm->device().name(), comm->device().gdr().checked);
    return ncclInvalidUsage;
  }
  (void)type;  // the memory is whatever the dma-buf exports; NCCL passes NCCL_PTR_CUDA
  const ncclResult_t result = register_region(
      "regMrDmaBuf", *comm,
      [&](MrCache& cache) {
        return cache.acquire_dmabuf(reinterpret_cast<uintptr_t>(data), size, offset, fd);
      },
      mhandle);
  note_registration(*comm, true, data, size);
  return result;
}

ncclResult_t dereg_mr(void* handle, void* mhandle) {
  Comm* comm = registration_comm("deregMr", handle);
  if (comm == nullptr) {
    return ncclInvalidArgument;
  }
  MrHandle* mh = as_mr(mhandle);
  if (mh == nullptr) {
    return not_a("deregMr", "memory handle", mhandle);
  }
  if (mh->device != &comm->device() ||
      mh->device_id != static_cast<ConnectedComm*>(comm)->device_id()) {
    ROCE_WARN(NCCL_NET,
              "deregMr: memory handle of [0x{:x}, +{}) was registered on another device "
              "than {}, the device of this comm",
              mh->addr, mh->length, comm->device().name());
    return ncclInvalidArgument;
  }
  for (size_t m = 0; m < mh->member_count; ++m) {
    if (!mh->devices[m]->mr_cache().release(mh->regions[m])) {
      ROCE_WARN(NCCL_NET, "deregMr: [0x{:x}, +{}) is not registered on {} (deregistered twice?)",
                mh->addr, mh->length, mh->devices[m]->name());
      return ncclInvalidArgument;
    }
  }
  mh->magic = 0;
  delete mh;
  return ncclSuccess;
}

void set_profiler(ncclProfilerCallback_t profiler) noexcept {
  telemetry::set_profiler(profiler);
}

ncclResult_t iflush(void* handle, int n, void** data, const int* sizes, void** mhandles,
                    void** request) {
  Comm* comm = Comm::from_handle(handle, CommKind::Recv);
  if (comm == nullptr) [[unlikely]] {
    return not_a("iflush", "recv comm", handle);
  }
  return static_cast<RecvComm*>(comm)->iflush(n, data, sizes, mhandles, request);
}

ncclResult_t not_a_comm(const char* entry, const char* what, const void* handle) noexcept {
  return not_a(entry, what, handle);
}

ncclResult_t not_in_flight(void* request) noexcept {
  ROCE_WARN(NCCL_NET,
            "test: {} is not a request in flight (already completed by test, or not a RoCE "
            "request)",
            request);
  return ncclInvalidArgument;
}

ncclResult_t irecv_consumed(void* handle, int /*n*/, void* /*request*/) {
  // Receives are recycled by test() already; the GPU having consumed the data changes nothing.
  if (Comm::from_handle(handle, CommKind::Recv) == nullptr) {
    return not_a("irecvConsumed", "recv comm", handle);
  }
  return ncclSuccess;
}

ncclResult_t get_device_mr(void* handle, void* /*mhandle*/, void** dptr_mhandle) {
  if (registration_comm("getDeviceMr", handle) == nullptr) {
    return ncclInvalidArgument;
  }
  *dptr_mhandle = nullptr;  // no device-side offload (netDeviceType HOST)
  return ncclSuccess;
}

ncclResult_t close_send(void* handle) {
  Comm* comm = Comm::from_handle(handle, CommKind::Send);
  if (comm == nullptr) {
    return not_a("closeSend", "send comm", handle);
  }
  delete comm;  // QPs to ERR, drained, destroyed; then CQ and buffers
  return ncclSuccess;
}

ncclResult_t close_recv(void* handle) {
  Comm* comm = Comm::from_handle(handle, CommKind::Recv);
  if (comm == nullptr) {
    return not_a("closeRecv", "recv comm", handle);
  }
  delete comm;
  return ncclSuccess;
}

}  // namespace roce::api
