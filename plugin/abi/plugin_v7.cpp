// ncclNetPlugin_v7: the table NCCL 2.19 loads. v6 plus offload handles (always NULL here),
// getDeviceMr and irecvConsumed; regMr still takes an int size.
#include "abi/adapters.h"

using namespace roce::abi;

extern "C" {

__attribute__((visibility("default"))) ncclNet_v7_t ncclNetPlugin_v7 = {
    .name = kPluginName,
    .init = init_v8,
    .devices = devices_v8,
    .getProperties = get_properties_v7,
    .listen = listen_v8,
    .connect = connect_v8,
    .accept = accept_v8,
    .regMr = reg_mr_v6,
    .regMrDmaBuf = reg_mr_dmabuf_v8,
    .deregMr = dereg_mr_v8,
    .isend = isend_v8,
    .irecv = irecv_v8,
    .iflush = iflush_v8,
    .test = test_v8,
    .closeSend = close_send_v8,
    .closeRecv = close_recv_v8,
    .closeListen = close_listen_v8,
    .getDeviceMr = get_device_mr_v8,
    .irecvConsumed = irecv_consumed_v8,
};

}  // extern "C"
