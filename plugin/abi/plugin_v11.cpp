// ncclNetPlugin_v11 (NCCL 2.28): a context per communicator from init (carrying its traffic
// class), finalize (NCCL calls it unchecked, so it must be set) and setNetAttr.
#include "abi/adapters.h"

using namespace roce::abi;

extern "C" {

__attribute__((visibility("default"))) ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = kPluginName,
    .init = init_v11,
    .devices = devices_v8,
    .getProperties = get_properties_v11,
    .listen = listen_v11,
    .connect = connect_v11,
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
    .finalize = finalize_v11,
    .setNetAttr = set_net_attr_v11,
};

}  // extern "C"
