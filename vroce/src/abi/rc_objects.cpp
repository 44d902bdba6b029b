// Exported entry points of the RC part's objects: PD, MR, CQ, completion channel and QP. Thin:
// the work is in core/; these only follow rdma-core's calling conventions (pointer + errno, or an
// errno value as the result).
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>

#include "abi/export.h"
#include "core/ece.h"
#include "core/verbs.h"

// ---- protection domains ----------------------------------------------------------------------

VROCE_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* context) {
  return vroce::core::alloc_pd(context);
}

VROCE_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  return vroce::core::dealloc_pd(pd);
}

// ---- memory regions --------------------------------------------------------------------------

// verbs.h turns ibv_reg_mr and ibv_reg_mr_iova into macros that pick the function by the access
// flags; the exported functions are the real symbols behind them.
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

VROCE_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return vroce::core::reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                             static_cast<unsigned>(access));
}

VROCE_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                     int access) {
  return vroce::core::reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}

VROCE_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                      unsigned int access) {
  return vroce::core::reg_mr(pd, addr, length, iova, access);
}

VROCE_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova,
                                       int fd, int access) {
  return vroce::core::reg_dmabuf_mr(pd, offset, length, iova, fd, static_cast<unsigned>(access));
}

// Re-registration is not implemented: the region stays as it was and the caller learns so
// (rdma-core reports a provider without rereg_mr the same way). Deregister and register again.
VROCE_EXPORT int ibv_rereg_mr(ibv_mr* /*mr*/, int /*flags*/, ibv_pd* /*pd*/, void* /*addr*/,
                              size_t /*length*/, int /*access*/) {
  errno = EOPNOTSUPP;
  return IBV_REREG_MR_ERR_INPUT;
}

VROCE_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  return vroce::core::dereg_mr(mr);
}

// ---- completion queues and channels ----------------------------------------------------------

VROCE_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  return vroce::core::create_comp_channel(context);
}

VROCE_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  return vroce::core::destroy_comp_channel(channel);
}

VROCE_EXPORT ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                                   ibv_comp_channel* channel, int comp_vector) {
  return vroce::core::create_cq(context, cqe, cq_context, channel, comp_vector);
}

VROCE_EXPORT int ibv_resize_cq(ibv_cq* cq, int cqe) {
  return vroce::core::resize_cq(cq, cqe);
}

VROCE_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
  return vroce::core::destroy_cq(cq);
}

VROCE_EXPORT int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  return vroce::core::get_cq_event(channel, cq, cq_context);
}

VROCE_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  vroce::core::ack_cq_events(cq, nevents);
}

// ---- queue pairs -----------------------------------------------------------------------------

VROCE_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  return vroce::core::create_qp(pd, qp_init_attr);
}

VROCE_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  return vroce::core::modify_qp(qp, attr, attr_mask);
}

VROCE_EXPORT int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask,
                              ibv_qp_init_attr* init_attr) {
  return vroce::core::query_qp(qp, attr, attr_mask, init_attr);
}

VROCE_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
  return vroce::core::destroy_qp(qp);
}

// vroce places every payload in PSN order from one thread, so the data of SEND, RDMA WRITE and
// RDMA READ is written in order; flags other than 0 are not defined by rdma-core 44.
VROCE_EXPORT int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  if (qp == nullptr || flags != 0) {
    return 0;
  }
  switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
      return 1;
    default:
      return 0;
  }
}

// Enhanced connection establishment, with mlx5's semantics (core/ece.h).
VROCE_EXPORT int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  return vroce::core::query_ece(qp, ece);
}

VROCE_EXPORT int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  return vroce::core::set_ece(qp, ece);
}

// vroce QPs are created by ibv_create_qp and have no ibv_qp_ex (no work-request builder API);
// rdma-core returns NULL for such QPs too.
VROCE_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* /*qp*/) {
  errno = EOPNOTSUPP;
  return nullptr;
}
