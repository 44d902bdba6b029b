// The object verbs of the RC part (PD, MR, CQ, completion channel, QP), implemented in core/ and
// exported by thin wrappers in abi/. Each returns what rdma-core's entry point returns: a pointer
// (nullptr with errno set) or 0 / an errno value. A parameter named ibv is the application's
// handle, which the definition turns into vroce's own object.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace vroce::core {

ibv_pd* alloc_pd(ibv_context* context);
int dealloc_pd(ibv_pd* ibv);

// iova is the address SGEs and RETHs use for addr's first byte (addr itself for ibv_reg_mr).
ibv_mr* reg_mr(ibv_pd* ibv, void* addr, size_t length, uint64_t iova, unsigned access);
ibv_mr* reg_dmabuf_mr(ibv_pd* ibv, uint64_t offset, size_t length, uint64_t iova, int fd,
                      unsigned access);
int dereg_mr(ibv_mr* ibv);

ibv_comp_channel* create_comp_channel(ibv_context* context);
int destroy_comp_channel(ibv_comp_channel* ibv);
ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector);
int resize_cq(ibv_cq* ibv, int cqe);
int destroy_cq(ibv_cq* ibv);
int get_cq_event(ibv_comp_channel* ibv, ibv_cq** cq_out, void** cq_context);
void ack_cq_events(ibv_cq* ibv, unsigned int nevents);

ibv_qp* create_qp(ibv_pd* ibv_pd_ptr, ibv_qp_init_attr* init);
int modify_qp(ibv_qp* ibv, ibv_qp_attr* attr, int mask);
int query_qp(ibv_qp* ibv, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
int destroy_qp(ibv_qp* ibv);

// The data path (core/data_path.cpp), installed into ibv_context_ops.
int post_send(ibv_qp* ibv, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv(ibv_qp* ibv, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int poll_cq(ibv_cq* ibv, int num_entries, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
// Fills the data-path entries of the ops table (post_send, post_recv, poll_cq, req_notify_cq,
// and the stubs that must report EOPNOTSUPP/ENOSYS); called by ibv_open_device.
void install_data_path_ops(ibv_context_ops& ops) noexcept;

// Largest inline payload a QP may ask for.
inline constexpr uint32_t kMaxInlineData = 1024;

}  // namespace vroce::core
