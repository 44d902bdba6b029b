// ncclNetPlugin_v6: the table NCCL 2.13 .. 2.18 load. No offload handles (connect and accept have
// none), int sizes in regMr, isend and irecv.
#include "abi/adapters.h"

using namespace roce::abi;

extern "C" {

__attribute__((visibility("default"))) ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = kPluginName,
    .init = init_v8,
    .devices = devices_v8,
    .getProperties = get_properties_v6,
    .listen = listen_v8,
    .connect = connect_v6,
    .accept = accept_v6,
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
};

}  // extern "C"
