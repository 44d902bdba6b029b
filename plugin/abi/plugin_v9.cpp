// ncclNetPlugin_v9 (NCCL 2.24, 2.25): size_t sizes, virtual devices, transfer-size limits.
#include "abi/adapters.h"

using namespace roce::abi;

extern "C" {

__attribute__((visibility("default"))) ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = kPluginName,
    .init = init_v8,
    .devices = devices_v8,
    .getProperties = get_properties_v9,
    .listen = listen_v8,
    .connect = connect_v8,
    .accept = accept_v8,
    .regMr = reg_mr_v8,
    .regMrDmaBuf = reg_mr_dmabuf_v8,
    .deregMr = dereg_mr_v8,
    .isend = isend_v9,
    .irecv = irecv_v9,
    .iflush = iflush_v8,
    .test = test_v8,
    .closeSend = close_send_v8,
    .closeRecv = close_recv_v8,
    .closeListen = close_listen_v8,
    .getDeviceMr = get_device_mr_v8,
    .irecvConsumed = irecv_consumed_v8,
    .makeVDevice = make_vdevice_v9,
};

}  // extern "C"
