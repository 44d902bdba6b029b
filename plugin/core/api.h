// The plugin's version-neutral entry points: what every ncclNet_vN adapter in abi/ calls after
// checking its arguments. Each function may throw (std::bad_alloc, std::runtime_error); the
// adapters catch. Errors decided here are logged here, once, with the facts an operator needs.
//
// Handles given to NCCL (comms, requests, memory handles, v11 contexts) are pointers to objects
// that start with a type tag, so a stale or foreign pointer is reported instead of used.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_net/nccl_net.h"

namespace roce::api {

// The members of a virtual NIC: as many as the largest table holds (v12's 8); abi/ copies as
// many as each version's table has room for.
struct VDeviceMembers {
  int ndevs = 0;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12] = {};
};

// Properties common to every ncclNet version; abi/ copies the fields each version has.
struct Properties {
  const char* name = nullptr;
  const char* pci_path = nullptr;
  uint64_t guid = 0;
  int ptr_support = NCCL_PTR_HOST;
  int reg_is_global = 1;
  int force_flush = 0;
  int speed = 0;  // Mb/s
  int port = 1;
  float latency = 0;
  int max_comms = 0;
  int max_recvs = 1;
  ncclNetDeviceType device_type = NCCL_NET_DEVICE_HOST;
  int device_version = NCCL_NET_DEVICE_INVALID_VERSION;
  VDeviceMembers vprops;
  size_t max_p2p_bytes = 0;
  size_t max_coll_bytes = 0;
  int max_multi_request_size = 1;
  int16_t rail_id = NCCL_NET_ID_UNDEF;  // v12: from NCCL_IB_HCA's name:port:rail:plane
  int16_t plane_id = NCCL_NET_ID_UNDEF;
};

// Initialises the plugin once per process (later calls take a reference). Returns a failure,
// logged once, when libibverbs is missing, no usable port exists or a setting is invalid.
ncclResult_t init(ncclDebugLogger_t logger);
// Drops one init reference; the last one releases devices and threads (comms still open keep
// what they use alive).
ncclResult_t finalize();

// v11: init once per communicator, returning a context that carries its traffic class
// (NCCL_NET_TRAFFIC_CLASS_UNDEF when the communicator sets none). init_context takes an init
// reference, finalize_context drops it.
ncclResult_t init_context(ncclDebugLogger_t logger, uint64_t comm_id, int traffic_class,
                          void** ctx);
ncclResult_t finalize_context(void* ctx);
ncclResult_t set_net_attr(void* ctx, const ncclNetAttr_v11_t& attr);
// The traffic class a v11 context carries; throws on a pointer that is not one.
int context_traffic_class(void* ctx);

ncclResult_t devices(int* ndev);
ncclResult_t get_properties(int dev, Properties* props);
ncclResult_t make_vdevice(int* d, const VDeviceMembers& props);

// traffic_class: the communicator's class (v10 connect config, v11 context), or
// NCCL_NET_TRAFFIC_CLASS_UNDEF (v8, v9, and listen before v11).
ncclResult_t listen(int dev, int traffic_class, void* handle, void** listen_comm);
ncclResult_t connect(int dev, int traffic_class, void* handle, void** send_comm);
ncclResult_t accept(void* listen_comm, void** recv_comm);

// handle: the comm NCCL passes back: a send comm (isend, close_send), a receive comm (irecv,
// iflush, irecv_consumed, close_recv), or either (reg_mr, reg_mr_dmabuf, dereg_mr, get_device_mr).
ncclResult_t reg_mr(void* handle, void* data, size_t size, int type, void** mhandle);
ncclResult_t reg_mr_dmabuf(void* handle, void* data, size_t size, int type, uint64_t offset, int fd,
                           void** mhandle);
ncclResult_t dereg_mr(void* handle, void* mhandle);

// The data path (isend, irecv, test): inline, in core/datapath/api_data_path.h.
// The profiler callback NCCL passed to init (v10+).
void set_profiler(ncclProfilerCallback_t profiler) noexcept;
ncclResult_t iflush(void* handle, int n, void** data, const int* sizes, void** mhandles,
                    void** request);
ncclResult_t irecv_consumed(void* handle, int n, void* request);
ncclResult_t get_device_mr(void* handle, void* mhandle, void** dptr_mhandle);

ncclResult_t close_send(void* handle);
// Connect attempts NCCL abandoned (it stopped calling connect); dropped at the last finalize.
void abandon_connect_attempts() noexcept;
ncclResult_t close_recv(void* handle);
ncclResult_t close_listen(void* listen_comm);

}  // namespace roce::api
