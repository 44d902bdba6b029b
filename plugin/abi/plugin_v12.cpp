// ncclNetPlugin_v12 (NCCL 2.30): v11's functions, with properties that carry the rail and plane
// NCCL_IB_HCA gave each device and virtual NICs of up to 8 members.
#include "abi/adapters.h"

using namespace roce::abi;

extern "C" {

__attribute__((visibility("default"))) ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = kPluginName,
    .init = init_v11,
    .devices = devices_v8,
    .getProperties = get_properties_v12,
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
    .makeVDevice = make_vdevice_v12,
    .finalize = finalize_v11,
    .setNetAttr = set_net_attr_v11,
};

}  // extern "C"
