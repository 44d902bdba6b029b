// Adapters for connection setup and teardown: listen, connect, accept, close*.
#include "abi/adapters.h"
#include "abi/guard.h"
#include "core/api.h"

namespace roce::abi {
namespace {

ncclResult_t listen_with(const char* entry, int dev, int traffic_class, void* handle,
                         void** listen_comm) noexcept {
  clear(listen_comm);
  if (handle == nullptr || listen_comm == nullptr) {
    return invalid_argument(entry, "{} is NULL", handle == nullptr ? "handle" : "listenComm");
  }
  return guarded(entry, [&] { return api::listen(dev, traffic_class, handle, listen_comm); });
}

template <typename DevComm>
ncclResult_t connect_with(const char* entry, int dev, int traffic_class, void* handle,
                          void** send_comm, DevComm** send_dev_comm) noexcept {
  clear(send_comm);
  if (send_dev_comm != nullptr) {
    *send_dev_comm = nullptr;  // no device offload
  }
  if (handle == nullptr || send_comm == nullptr) {
    return invalid_argument(entry, "{} is NULL", handle == nullptr ? "handle" : "sendComm");
  }
  return guarded(entry, [&] { return api::connect(dev, traffic_class, handle, send_comm); });
}

}  // namespace

ncclResult_t listen_v8(int dev, void* handle, void** listen_comm) noexcept {
  return listen_with("listen", dev, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, listen_comm);
}

ncclResult_t listen_v11(void* ctx, int dev, void* handle, void** listen_comm) noexcept {
  if (ctx == nullptr) {
    return invalid_argument("listen", "ctx is NULL; pass the context init returned");
  }
  int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
  ncclResult_t result = guarded("listen", [&] {
    traffic_class = api::context_traffic_class(ctx);
    return ncclSuccess;
  });
  if (result != ncclSuccess) {
    return result;
  }
  return listen_with("listen", dev, traffic_class, handle, listen_comm);
}

ncclResult_t connect_v6(int dev, void* handle, void** send_comm) noexcept {
  return connect_with("connect", dev, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, send_comm,
                      static_cast<ncclNetDeviceHandle_v7_t**>(nullptr));
}

ncclResult_t connect_v8(int dev, void* handle, void** send_comm,
                        ncclNetDeviceHandle_v8_t** send_dev_comm) noexcept {
  return connect_with("connect", dev, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, send_comm,
                      send_dev_comm);
}

ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** send_comm,
                         ncclNetDeviceHandle_v10_t** send_dev_comm) noexcept {
  const int traffic_class = config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return connect_with("connect", dev, traffic_class, handle, send_comm, send_dev_comm);
}

ncclResult_t connect_v11(void* ctx, int dev, void* handle, void** send_comm,
                         ncclNetDeviceHandle_v11_t** send_dev_comm) noexcept {
  if (ctx == nullptr) {
    return invalid_argument("connect", "ctx is NULL; pass the context init returned");
  }
  int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
  ncclResult_t result = guarded("connect", [&] {
    traffic_class = api::context_traffic_class(ctx);
    return ncclSuccess;
  });
  if (result != ncclSuccess) {
    return result;
  }
  return connect_with("connect", dev, traffic_class, handle, send_comm, send_dev_comm);
}

ncclResult_t accept_v8(void* listen_comm, void** recv_comm,
                       ncclNetDeviceHandle_v8_t** recv_dev_comm) noexcept {
  clear(recv_comm);
  if (recv_dev_comm != nullptr) {
    *recv_dev_comm = nullptr;
  }
  if (listen_comm == nullptr || recv_comm == nullptr) {
    return invalid_argument("accept", "{} is NULL",
                            listen_comm == nullptr ? "listenComm" : "recvComm");
  }
  return guarded("accept", [&] { return api::accept(listen_comm, recv_comm); });
}

ncclResult_t accept_v6(void* listen_comm, void** recv_comm) noexcept {
  return accept_v8(listen_comm, recv_comm, nullptr);
}

ncclResult_t close_send_v8(void* send_comm) noexcept {
  if (send_comm == nullptr) {
    return invalid_argument("closeSend", "sendComm is NULL");
  }
  return guarded("closeSend", [&] { return api::close_send(send_comm); });
}

ncclResult_t close_recv_v8(void* recv_comm) noexcept {
  if (recv_comm == nullptr) {
    return invalid_argument("closeRecv", "recvComm is NULL");
  }
  return guarded("closeRecv", [&] { return api::close_recv(recv_comm); });
}

ncclResult_t close_listen_v8(void* listen_comm) noexcept {
  if (listen_comm == nullptr) {
    return invalid_argument("closeListen", "listenComm is NULL");
  }
  return guarded("closeListen", [&] { return api::close_listen(listen_comm); });
}

}  // namespace roce::abi
