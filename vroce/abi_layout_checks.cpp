// Compiled into libibverbs.so.1 itself: vroce hands out pointers to rdma-core's public structs,
// which programs built against rdma-core 44 read at fixed offsets. These sizes and offsets are
// those of rdma-core 44 on x86-64; a different verbs.h fails the build here, not at run time.
#include <infiniband/verbs.h>

#include <cstddef>

static_assert(sizeof(ibv_device) == 664);
static_assert(sizeof(ibv_context) == 328);
static_assert(sizeof(ibv_context_ops) == 256);
static_assert(offsetof(ibv_context_ops, poll_cq) == 88);
static_assert(offsetof(ibv_context_ops, post_send) == 200);
static_assert(offsetof(ibv_context_ops, post_recv) == 208);
static_assert(sizeof(verbs_context) == 648);
static_assert(offsetof(verbs_context, context) == 320);
static_assert(sizeof(ibv_pd) == 16);
static_assert(sizeof(ibv_mr) == 48);
static_assert(sizeof(ibv_cq) == 128);
static_assert(sizeof(ibv_qp) == 160);
static_assert(sizeof(ibv_port_attr) == 52);
static_assert(sizeof(ibv_device_attr) == 232);
static_assert(sizeof(ibv_wc) == 48);
static_assert(sizeof(ibv_send_wr) == 128);
static_assert(sizeof(ibv_qp_attr) == 144);
static_assert(sizeof(ibv_gid_entry) == 32);
