// The ncclNet adapters. Each is named for the earliest ncclNet version whose signature it
// matches, and later tables reuse it where the signature did not change (as NCCL's own example
// plugin and aws-ofi-nccl do). Each checks its arguments, writes its out-parameters (NCCL may
// pre-store (void*)0x1 in *request) and calls the version-neutral core in core/api.h.
#pragma once

#include "nccl_net/nccl_net.h"

namespace roce::abi {

// The name NCCL matches NCCL_NET against (case-insensitive).
inline constexpr const char* kPluginName = "RoCE";

ncclResult_t init_v8(ncclDebugLogger_t logger) noexcept;
ncclResult_t init_v10(ncclDebugLogger_t logger, ncclProfilerCallback_t profiler) noexcept;
ncclResult_t init_v11(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                      ncclDebugLogger_t logger, ncclProfilerCallback_t profiler) noexcept;
ncclResult_t finalize_v11(void* ctx) noexcept;
ncclResult_t set_net_attr_v11(void* ctx, ncclNetAttr_v11_t* attr) noexcept;

ncclResult_t devices_v8(int* ndev) noexcept;
ncclResult_t get_properties_v6(int dev, ncclNetProperties_v6_t* props) noexcept;
ncclResult_t get_properties_v7(int dev, ncclNetProperties_v7_t* props) noexcept;
ncclResult_t get_properties_v8(int dev, ncclNetProperties_v8_t* props) noexcept;
ncclResult_t get_properties_v9(int dev, ncclNetProperties_v9_t* props) noexcept;
ncclResult_t get_properties_v11(int dev, ncclNetProperties_v11_t* props) noexcept;
ncclResult_t get_properties_v12(int dev, ncclNetProperties_v12_t* props) noexcept;
ncclResult_t make_vdevice_v9(int* d, ncclNetVDeviceProps_v9_t* props) noexcept;
ncclResult_t make_vdevice_v12(int* d, ncclNetVDeviceProps_v12_t* props) noexcept;

ncclResult_t listen_v8(int dev, void* handle, void** listen_comm) noexcept;
ncclResult_t listen_v11(void* ctx, int dev, void* handle, void** listen_comm) noexcept;
ncclResult_t connect_v6(int dev, void* handle, void** send_comm) noexcept;
ncclResult_t connect_v8(int dev, void* handle, void** send_comm,
                        ncclNetDeviceHandle_v8_t** send_dev_comm) noexcept;
ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** send_comm,
                         ncclNetDeviceHandle_v10_t** send_dev_comm) noexcept;
ncclResult_t connect_v11(void* ctx, int dev, void* handle, void** send_comm,
                         ncclNetDeviceHandle_v11_t** send_dev_comm) noexcept;
ncclResult_t accept_v6(void* listen_comm, void** recv_comm) noexcept;
ncclResult_t accept_v8(void* listen_comm, void** recv_comm,
                       ncclNetDeviceHandle_v8_t** recv_dev_comm) noexcept;

ncclResult_t reg_mr_v6(void* comm, void* data, int size, int type, void** mhandle) noexcept;
ncclResult_t reg_mr_v8(void* comm, void* data, size_t size, int type, void** mhandle) noexcept;
ncclResult_t reg_mr_dmabuf_v8(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle) noexcept;
ncclResult_t dereg_mr_v8(void* comm, void* mhandle) noexcept;

ncclResult_t isend_v8(void* send_comm, void* data, int size, int tag, void* mhandle,
                      void** request) noexcept;
ncclResult_t isend_v9(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                      void** request) noexcept;
ncclResult_t isend_v10(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                       void* phandle, void** request) noexcept;
ncclResult_t irecv_v8(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles,
                      void** request) noexcept;
ncclResult_t irecv_v9(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                      void** mhandles, void** request) noexcept;
ncclResult_t irecv_v10(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                       void** mhandles, void** phandles, void** request) noexcept;
ncclResult_t iflush_v8(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                       void** request) noexcept;
ncclResult_t test_v8(void* request, int* done, int* sizes) noexcept;

ncclResult_t close_send_v8(void* send_comm) noexcept;
ncclResult_t close_recv_v8(void* recv_comm) noexcept;
ncclResult_t close_listen_v8(void* listen_comm) noexcept;
ncclResult_t get_device_mr_v8(void* comm, void* mhandle, void** dptr_mhandle) noexcept;
ncclResult_t irecv_consumed_v8(void* recv_comm, int n, void* request) noexcept;

}  // namespace roce::abi
