// Adapters for plugin setup: init/finalize, device enumeration, properties, virtual devices.
#include <cstring>

#include "abi/adapters.h"
#include "abi/guard.h"
#include "core/api.h"
#include "core/datapath/data_path_limits.h"

namespace roce::abi {
namespace {

// Fields every property struct shares (v8 is the common prefix, minus forceFlush).
template <typename Props>
void copy_common(const api::Properties& from, Props* to) {
  to->name = const_cast<char*>(from.name);
  to->pciPath = const_cast<char*>(from.pci_path);
  to->guid = from.guid;
  to->ptrSupport = from.ptr_support;
  to->regIsGlobal = from.reg_is_global;
  to->speed = from.speed;
  to->port = from.port;
  to->latency = from.latency;
  to->maxComms = from.max_comms;
  to->maxRecvs = from.max_recvs;
  to->netDeviceType = from.device_type;
  to->netDeviceVersion = from.device_version;
}

template <typename Props>
void copy_v9(const api::Properties& from, Props* to) {
  copy_common(from, to);
  to->forceFlush = from.force_flush;
  to->vProps = from.vprops;
  to->maxP2pBytes = from.max_p2p_bytes;
  to->maxCollBytes = from.max_coll_bytes;
}

template <typename Props, typename Copy>
ncclResult_t get_properties(const char* entry, int dev, Props* props, Copy copy) noexcept {
  if (props == nullptr) {
    return invalid_argument(entry, "props is NULL");
  }
  return guarded(entry, [&] {
    api::Properties common;
    ncclResult_t result = api::get_properties(dev, &common);
    if (result == ncclSuccess) {
      std::memset(static_cast<void*>(props), 0, sizeof(*props));
      copy(common, props);
    }
    return result;
  });
}

}  // namespace

ncclResult_t init_v8(ncclDebugLogger_t logger) noexcept {
  return guarded("init", [&] { return api::init(logger); });
}

ncclResult_t init_v10(ncclDebugLogger_t logger, ncclProfilerCallback_t profiler) noexcept {
  // Kept for the data path's profiler events (telemetry/profiler_events.h).
  api::set_profiler(profiler);
  return init_v8(logger);
}

ncclResult_t init_v11(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                      ncclDebugLogger_t logger, ncclProfilerCallback_t profiler) noexcept {
  if (ctx == nullptr) {
    return invalid_argument("init",
                            "ctx is NULL; NCCL passes the address of the "
                            "communicator's context slot");
  }
  // NCCL calls finalize(*ctx) even when init fails, so leave a value finalize accepts.
  *ctx = nullptr;
  api::set_profiler(profiler);
  const int traffic_class = config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return guarded("init", [&] { return api::init_context(logger, comm_id, traffic_class, ctx); });
}

ncclResult_t finalize_v11(void* ctx) noexcept {
  if (ctx == nullptr) {
    // After a failed init (see init_v11): nothing was taken, nothing to give back.
    return ncclSuccess;
  }
  return guarded("finalize", [&] { return api::finalize_context(ctx); });
}

ncclResult_t set_net_attr_v11(void* ctx, ncclNetAttr_v11_t* attr) noexcept {
  if (ctx == nullptr || attr == nullptr) {
    return invalid_argument("setNetAttr", "{} is NULL", ctx == nullptr ? "ctx" : "netAttr");
  }
  return guarded("setNetAttr", [&] { return api::set_net_attr(ctx, *attr); });
}

ncclResult_t devices_v8(int* ndev) noexcept {
  if (ndev == nullptr) {
    return invalid_argument("devices", "ndev is NULL");
  }
  return guarded("devices", [&] { return api::devices(ndev); });
}

ncclResult_t get_properties_v8(int dev, ncclNetProperties_v8_t* props) noexcept {
  return get_properties(
      "getProperties", dev, props,
      [](const api::Properties& from, ncclNetProperties_v8_t* to) { copy_common(from, to); });
}

ncclResult_t get_properties_v9(int dev, ncclNetProperties_v9_t* props) noexcept {
  return get_properties(
      "getProperties", dev, props,
      [](const api::Properties& from, ncclNetProperties_v9_t* to) { copy_v9(from, to); });
}

ncclResult_t get_properties_v11(int dev, ncclNetProperties_v11_t* props) noexcept {
  return get_properties("getProperties", dev, props,
                        [](const api::Properties& from, ncclNetProperties_v11_t* to) {
                          copy_v9(from, to);
                          to->maxMultiRequestSize = from.max_multi_request_size;
                        });
}

ncclResult_t make_vdevice_v9(int* d, ncclNetVDeviceProps_v9_t* props) noexcept {
  if (d == nullptr || props == nullptr) {
    return invalid_argument("makeVDevice", "{} is NULL", d == nullptr ? "d" : "props");
  }
  if (props->ndevs < 1 || props->ndevs > NCCL_NET_MAX_DEVS_PER_NIC) {
    return invalid_argument("makeVDevice", "ndevs {} is outside 1..{}", props->ndevs,
                            NCCL_NET_MAX_DEVS_PER_NIC);
  }
  return guarded("makeVDevice", [&] { return api::make_vdevice(d, *props); });
}

}  // namespace roce::abi
