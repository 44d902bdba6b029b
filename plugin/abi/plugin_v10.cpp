// ncclNetPlugin_v10 (NCCL 2.26, 2.27): the communicator's traffic class arrives at connect.
#include "abi/adapters.h"

using namespace roce::abi;

extern "C" {

__attribute__((visibility("default"))) ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = kPluginName,
    .init = init_v10,
    .devices = devices_v8,
    .getProperties = get_properties_v9,
    .listen = listen_v8,
    .connect = connect_v10,
    .accept = accept_v8,
    .regMr = reg_mr_v8,
    .regMrDmaBuf = reg_mr_dmabuf_v8,
    .deregMr = dereg_mr_v8,
    .isend = isend_v10,
    .irecv = irecv_v10,
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
