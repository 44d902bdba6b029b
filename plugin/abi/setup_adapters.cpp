// Adapters for plugin setup: init/finalize, device enumeration, properties, virtual devices.
#include <cstring>
#include <type_traits>

#include "abi/adapters.h"
#include "abi/guard.h"
#include "core/api.h"
#include "core/datapath/data_path_limits.h"

namespace roce::abi {
namespace {

// Each ncclNet version's properties extend an earlier version's; each copy adds what its version
// added. v6: the fields every version has.
template <typename Props>
void copy_v6(const api::Properties& from, Props* to) {
  to->name = const_cast<char*>(from.name);
  to->pciPath = const_cast<char*>(from.pci_path);
  to->guid = from.guid;
  to->ptrSupport = from.ptr_support;
  to->speed = from.speed;
  to->port = from.port;
  to->latency = from.latency;
  to->maxComms = from.max_comms;
  to->maxRecvs = from.max_recvs;
}

// v7: the offload type.
template <typename Props>
void copy_v7(const api::Properties& from, Props* to) {
  copy_v6(from, to);
  to->netDeviceType = from.device_type;
  to->netDeviceVersion = from.device_version;
}

// v8: regIsGlobal.
template <typename Props>
void copy_v8(const api::Properties& from, Props* to) {
  copy_v7(from, to);
  to->regIsGlobal = from.reg_is_global;
}

// The members of a virtual NIC, into a table of `capacity` entries (4 up to v11, 8 in v12).
template <typename VProps>
void copy_members(const api::VDeviceMembers& from, VProps* to) {
  constexpr int kCapacity = static_cast<int>(std::extent_v<decltype(VProps::devs)>);
  to->ndevs = from.ndevs < kCapacity ? from.ndevs : kCapacity;
  for (int i = 0; i < to->ndevs; ++i) {
    to->devs[i] = from.devs[i];
  }
}

// v9: forceFlush, the virtual NIC's members and the transfer-size limits.
template <typename Props>
void copy_v9(const api::Properties& from, Props* to) {
  copy_v8(from, to);
  to->forceFlush = from.force_flush;
  copy_members(from.vprops, &to->vProps);
  to->maxP2pBytes = from.max_p2p_bytes;
  to->maxCollBytes = from.max_coll_bytes;
}

// v11: maxMultiRequestSize.
template <typename Props>
void copy_v11(const api::Properties& from, Props* to) {
  copy_v9(from, to);
  to->maxMultiRequestSize = from.max_multi_request_size;
}

// v12: the rail and plane NCCL_IB_HCA gave the device.
void copy_v12(const api::Properties& from, ncclNetProperties_v12_t* to) {
  copy_v11(from, to);
  to->railId = from.rail_id;
  to->planeId = from.plane_id;
}

template <typename VProps>
ncclResult_t make_vdevice(int* d, VProps* props) noexcept {
  constexpr int kCapacity = static_cast<int>(std::extent_v<decltype(VProps::devs)>);
  if (d == nullptr || props == nullptr) {
    return invalid_argument("makeVDevice", "{} is NULL", d == nullptr ? "d" : "props");
  }
  if (props->ndevs < 1 || props->ndevs > kCapacity) {
    return invalid_argument("makeVDevice", "ndevs {} is outside 1..{}", props->ndevs, kCapacity);
  }
  api::VDeviceMembers members;
  members.ndevs = props->ndevs;
  for (int i = 0; i < props->ndevs; ++i) {
    members.devs[i] = props->devs[i];
  }
  return guarded("makeVDevice", [&] { return api::make_vdevice(d, members); });
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

ncclResult_t get_properties_v6(int dev, ncclNetProperties_v6_t* props) noexcept {
  return get_properties("getProperties", dev, props, copy_v6<ncclNetProperties_v6_t>);
}

ncclResult_t get_properties_v7(int dev, ncclNetProperties_v7_t* props) noexcept {
  return get_properties("getProperties", dev, props, copy_v7<ncclNetProperties_v7_t>);
}

ncclResult_t get_properties_v8(int dev, ncclNetProperties_v8_t* props) noexcept {
  return get_properties("getProperties", dev, props, copy_v8<ncclNetProperties_v8_t>);
}

ncclResult_t get_properties_v9(int dev, ncclNetProperties_v9_t* props) noexcept {
  return get_properties("getProperties", dev, props, copy_v9<ncclNetProperties_v9_t>);
}

ncclResult_t get_properties_v11(int dev, ncclNetProperties_v11_t* props) noexcept {
  return get_properties("getProperties", dev, props, copy_v11<ncclNetProperties_v11_t>);
}

ncclResult_t get_properties_v12(int dev, ncclNetProperties_v12_t* props) noexcept {
  return get_properties("getProperties", dev, props, copy_v12);
}

ncclResult_t make_vdevice_v9(int* d, ncclNetVDeviceProps_v9_t* props) noexcept {
  return make_vdevice(d, props);
}

ncclResult_t make_vdevice_v12(int* d, ncclNetVDeviceProps_v12_t* props) noexcept {
  return make_vdevice(d, props);
}

}  // namespace roce::abi
