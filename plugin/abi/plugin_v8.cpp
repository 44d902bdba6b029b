// ncclNetPlugin_v8: the table NCCL 2.20 .. 2.23 load (and newer NCCL when no later table is
// found).
#include "abi/adapters.h"

using namespace roce::abi;

extern "C" {

__attribute__((visibility("default"))) ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = kPluginName,
    .init = init_v8,
    .devices = devices_v8,
    .getProperties = get_properties_v8,
    .listen = listen_v8,
    .connect = connect_v8,
    .accept = accept_v8,
    .regMr = reg_mr_v8,
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
