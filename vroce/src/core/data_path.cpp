// The data-path entries of ibv_context_ops, which the header-inline verbs (ibv_post_send,
// ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) call directly: checks a NIC's driver makes at
// post time (QP state, queue space, SGE count, inline size, opcode), a copy of each work request
// into its preallocated slot, and a kick of the progress thread that costs a syscall only when
// the thread sleeps. Errors set *bad_wr and return the errno rdma-core documents.
#include <cerrno>
#include <cstring>

#include "core/cq.h"
#include "core/device_state.h"
#include "core/engine.h"
#include "core/qp.h"
#include "core/verbs.h"
#include "device/context.h"
#include "util/log.h"

namespace vroce::core {
namespace {

// Logged once per process per kind, so a program that retries does not flood stderr.
void warn_once(std::atomic<bool>& flag, const char* message) {
  if (!flag.exchange(true, std::memory_order_relaxed)) {
    VROCE_LOG(Warn, "%s", message);
  }
}

std::atomic<bool> g_warned_state{false};
std::atomic<bool> g_warned_opcode{false};
std::atomic<bool> g_warned_sge{false};
std::atomic<bool> g_warned_inline{false};
std::atomic<bool> g_warned_read{false};

int check_send_wr(const Qp& qp, const ibv_send_wr& wr) {
  switch (wr.opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      break;
    case IBV_WR_RDMA_READ:
      if ((wr.send_flags & IBV_SEND_INLINE) != 0) {
        warn_once(g_warned_read, "ibv_post_send: RDMA READ cannot carry inline data");
        return EINVAL;
      }
      if (qp.max_rd_atomic.load(std::memory_order_relaxed) == 0) {
        warn_once(g_warned_read,
                  "ibv_post_send: RDMA READ on a QP whose max_rd_atomic is 0 can never be "
                  "issued; set max_rd_atomic >= 1 at RTR->RTS");
        return EINVAL;
      }
      break;
    default:
      warn_once(g_warned_opcode,
                "ibv_post_send: opcode not supported on a vroce RC QP (SEND, SEND_WITH_IMM, "
                "RDMA_WRITE, RDMA_WRITE_WITH_IMM and RDMA_READ are; the device reports "
                "atomic_cap NONE and no memory windows)");
      return EINVAL;
  }
  if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > qp.cap.max_send_sge) {
    warn_once(g_warned_sge, "ibv_post_send: num_sge exceeds the QP's max_send_sge");
    return EINVAL;
  }
  return 0;
}

}  // namespace

int post_send(ibv_qp* ibv, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Qp& qp = *to_qp(ibv);
  ibv_qp_state state = qp.state.load(std::memory_order_acquire);
  if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR) {
    warn_once(g_warned_state, "ibv_post_send: the QP is not in RTS yet (send before RTS)");
    *bad_wr = wr;
    return EINVAL;
  }
  int rc = 0;
  bool posted = false;
  {
    std::lock_guard lock(qp.sq.post_mutex);
    uint32_t tail = qp.sq.tail.load(std::memory_order_relaxed);
    for (; wr != nullptr; wr = wr->next) {
      if (tail - qp.sq.free_head.load(std::memory_order_acquire) >= qp.sq.capacity()) {
        rc = ENOMEM;
        break;
      }
      rc = check_send_wr(qp, *wr);
      if (rc != 0) {
        break;
      }
      uint64_t length = 0;
      for (int i = 0; i < wr->num_sge; ++i) {
        length += wr->sg_list[i].length;
      }
      bool is_inline = (wr->send_flags & IBV_SEND_INLINE) != 0 && length > 0;
      if (is_inline && length > qp.cap.max_inline_data) {
        warn_once(g_warned_inline, "ibv_post_send: inline data exceeds the QP's max_inline_data");
        rc = EINVAL;
        break;
      }
      SendWqe& w = qp.sq.wqe(tail);
      w.wr_id = wr->wr_id;
      w.opcode = wr->opcode;
      w.send_flags = wr->send_flags | (qp.sq_sig_all ? IBV_SEND_SIGNALED : 0);
      w.imm_be = wr->imm_data;
      w.remote_addr = wr->wr.rdma.remote_addr;
      w.rkey = wr->wr.rdma.rkey;
      w.length = length;
      w.is_inline = is_inline;
      w.started = false;
      if (is_inline) {
        // The buffers may be reused as soon as ibv_post_send returns.
        uint8_t* dst = qp.sq.inline_data(tail);
        for (int i = 0; i < wr->num_sge; ++i) {
          std::memcpy(dst, reinterpret_cast<const void*>(wr->sg_list[i].addr),
                      wr->sg_list[i].length);
          dst += wr->sg_list[i].length;
        }
        w.num_sge = 0;
      } else {
        w.num_sge = static_cast<uint32_t>(wr->num_sge);
        if (wr->num_sge > 0) {
          std::memcpy(qp.sq.sges(tail), wr->sg_list,
                      sizeof(ibv_sge) * static_cast<size_t>(wr->num_sge));
        }
      }
      ++tail;
      posted = true;
    }
    // seq_cst pairs with the progress thread's load after it clears kick_queued (engine.cpp).
    qp.sq.tail.store(tail, std::memory_order_seq_cst);
  }
  if (posted) {
    qp.engine->kick(&qp);
  }
  if (rc != 0) {
    *bad_wr = wr;
  }
  return rc;
}

int post_recv(ibv_qp* ibv, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Qp& qp = *to_qp(ibv);
  ibv_qp_state state = qp.state.load(std::memory_order_acquire);
  if (state == IBV_QPS_RESET) {
    warn_once(g_warned_state, "ibv_post_recv: the QP is in RESET (receives need INIT or later)");
    *bad_wr = wr;
    return EINVAL;
  }
  int rc = 0;
  bool posted = false;
  {
    std::lock_guard lock(qp.rq.post_mutex);
    uint32_t tail = qp.rq.tail.load(std::memory_order_relaxed);
    for (; wr != nullptr; wr = wr->next) {
      if (tail - qp.rq.head.load(std::memory_order_acquire) >= qp.rq.capacity()) {
        rc = ENOMEM;
        break;
      }
      if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > qp.cap.max_recv_sge) {
        warn_once(g_warned_sge, "ibv_post_recv: num_sge exceeds the QP's max_recv_sge");
        rc = EINVAL;
        break;
      }
      RecvWqe& w = qp.rq.wqe(tail);
      w.wr_id = wr->wr_id;
      w.num_sge = static_cast<uint32_t>(wr->num_sge);
      w.length = 0;
      for (int i = 0; i < wr->num_sge; ++i) {
        w.length += wr->sg_list[i].length;
      }
      if (wr->num_sge > 0) {
        std::memcpy(qp.rq.sges(tail), wr->sg_list,
                    sizeof(ibv_sge) * static_cast<size_t>(wr->num_sge));
      }
      ++tail;
      posted = true;
    }
    qp.rq.tail.store(tail, std::memory_order_seq_cst);
  }
  // Receives need no kick, except in ERR where the progress thread must flush them.
  if (posted && qp.state.load(std::memory_order_acquire) == IBV_QPS_ERR) {
    qp.engine->kick(&qp);
  }
  if (rc != 0) {
    *bad_wr = wr;
  }
  return rc;
}

int poll_cq(ibv_cq* ibv, int num_entries, ibv_wc* wc) {
  Cq* cq = to_cq(ibv);
  int n = cq->poll(num_entries, wc);
  if (n == 0 && num_entries > 0) {
    // Nothing yet: if the engine is idle, receive what arrived on this thread rather than wait
    // for the progress thread to be scheduled (programs that busy-poll would otherwise compete
    // with it for the CPU).
    cq->device->progress();
    n = cq->poll(num_entries, wc);
  }
  return n;
}

int req_notify_cq(ibv_cq* cq, int solicited_only) {
  to_cq(cq)->arm(solicited_only != 0);
  return 0;
}

namespace {

int post_srq_recv_unsupported(ibv_srq* /*srq*/, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  *bad_wr = wr;
  return EOPNOTSUPP;
}

int bind_mw_unsupported(ibv_qp* /*qp*/, ibv_mw* /*mw*/, ibv_mw_bind* /*bind*/) {
  return EOPNOTSUPP;
}

int dealloc_mw_unsupported(ibv_mw* /*mw*/) {
  return EOPNOTSUPP;
}

}  // namespace

void install_data_path_ops(ibv_context_ops& ops) noexcept {
  ops.post_send = post_send;
  ops.post_recv = post_recv;
  ops.poll_cq = poll_cq;
  ops.req_notify_cq = req_notify_cq;
  ops.post_srq_recv = post_srq_recv_unsupported;
  // NULL alloc_mw makes the inline ibv_alloc_mw report EOPNOTSUPP; no MW can exist to bind.
  ops.alloc_mw = nullptr;
  ops.bind_mw = bind_mw_unsupported;
  ops.dealloc_mw = dealloc_mw_unsupported;
}

}  // namespace vroce::core
