// QP-level transport actions shared by the requester and the responder: send completions (with
// the hold-until-signaled slot rule), the error state and its flush, async events.
#include <cstring>

#include "core/cq.h"
#include "core/device_copies.h"
#include "core/device_state.h"
#include "core/engine.h"
#include "core/protocol.h"
#include "core/qp.h"
#include "device/async_events.h"
#include "device/context.h"
#include "stats/stats.h"
#include "util/log.h"

namespace vroce::core {
namespace {

ibv_wc_opcode send_wc_opcode(ibv_wr_opcode opcode) {
  switch (opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
      return IBV_WC_RDMA_READ;
    default:
      return IBV_WC_SEND;
  }
}

void push_completion(Qp& qp, Cq& cq, const ibv_wc& wc, bool solicited) {
  flush_device_writes();  // a READ's bytes are in device memory before its completion is seen
  ibv_wc checked = wc;
  if (wc.status == IBV_WC_SUCCESS && qp.state.load(std::memory_order_relaxed) == IBV_QPS_ERR) {
    // The copy that placed this work request's bytes failed (and failed the QP): the request did
    // not complete, as a NIC reports a DMA failure.
    checked.status = IBV_WC_LOC_QP_OP_ERR;
    checked.vendor_err = vendor_syndrome(IBV_WC_LOC_QP_OP_ERR);
  }
  stats().completions[static_cast<size_t>(checked.status)].add();
  if (!cq.push(checked, solicited)) {
    fail_qp_fatally(qp);  // the CQ raised IBV_EVENT_CQ_ERR; the QP whose completion was lost
  }
}

}  // namespace

uint32_t vendor_syndrome(ibv_wc_status status) noexcept {
  switch (status) {
    case IBV_WC_SUCCESS:
      return 0;
    case IBV_WC_LOC_LEN_ERR:
      return 0x01;
    case IBV_WC_LOC_QP_OP_ERR:
      return 0x02;
    case IBV_WC_LOC_PROT_ERR:
      return 0x04;
    case IBV_WC_WR_FLUSH_ERR:
      return 0x05;
    case IBV_WC_BAD_RESP_ERR:
      return 0x10;
    case IBV_WC_LOC_ACCESS_ERR:
      return 0x11;
    case IBV_WC_REM_INV_REQ_ERR:
      return 0x12;
    case IBV_WC_REM_ACCESS_ERR:
      return 0x13;
    case IBV_WC_REM_OP_ERR:
      return 0x14;
    case IBV_WC_RETRY_EXC_ERR:
      return 0x15;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return 0x16;
    default:
      return 0xFF;
  }
}

void fail_qp_fatally(Qp& qp) {
  if (qp.state.load(std::memory_order_relaxed) != IBV_QPS_ERR) {
    qp.state.store(IBV_QPS_ERR, std::memory_order_relaxed);
    raise_qp_event(qp, IBV_EVENT_QP_FATAL);
    // The next transmit pass flushes what is posted, as a NIC completes every WQE of a QP in
    // error with a flush error (callers hold the engine, as activate() needs).
    if (qp.engine != nullptr) {
      qp.engine->activate(&qp);
    }
  }
}

void raise_qp_event(Qp& qp, ibv_event_type type) {
  ibv_async_event event{};
  event.element.qp = &qp.ibv;
  event.event_type = type;
  qp.async_events_raised.fetch_add(1, std::memory_order_relaxed);
  device::raise_async_event(*qp.ctx, event);
}

void complete_send(Qp& qp, uint32_t index, ibv_wc_status status) {
  Requester& r = qp.tp.req;
  SendWqe& w = qp.sq.wqe(index);
  bool signaled = (w.send_flags & IBV_SEND_SIGNALED) != 0;
  if (w.opcode == IBV_WR_RDMA_READ && w.started && r.reads_outstanding > 0) {
    --r.reads_outstanding;
  }
  w.started = false;
  r.sq_head = index + 1;
  if (status != IBV_WC_SUCCESS || signaled) {
    ibv_wc wc{};
    wc.wr_id = w.wr_id;
    wc.status = status;
    wc.opcode = send_wc_opcode(w.opcode);
    wc.vendor_err = vendor_syndrome(status);
    wc.byte_len = static_cast<uint32_t>(w.length);
    wc.qp_num = qp.ibv.qp_num;
    wc.src_qp = qp.tp.path.dest_qpn;
    // The slot (and those of the unsignaled WQEs before it) is free before the completion is
    // visible, as mlx5 frees it in poll_cq: a program that polls this completion and posts at
    // once must find room. Nothing reads wqe(index) after this store; a poster may refill it.
    qp.sq.free_head.store(index + 1, std::memory_order_release);
    push_completion(qp, *qp.send_cq, wc, false);
  }
}

void flush_queues(Qp& qp) {
  Requester& r = qp.tp.req;
  uint32_t tail = qp.sq.tail.load(std::memory_order_seq_cst);
  while (r.sq_head != tail) {
    complete_send(qp, r.sq_head, IBV_WC_WR_FLUSH_ERR);
  }
  r.sq_assigned = r.sq_head;
  r.sq_next = r.sq_head;
  r.next_pkt = 0;
  r.psn = r.psn_end;
  r.una = r.psn_end;
  r.reads_outstanding = 0;
  r.ack_timer_armed = false;
  r.rnr_waiting = false;

  Responder& s = qp.tp.resp;
  uint32_t rq_tail = qp.rq.tail.load(std::memory_order_acquire);
  uint32_t head = qp.rq.head.load(std::memory_order_relaxed);
  while (head != rq_tail) {
    const RecvWqe& w = qp.rq.wqe(head);
    ibv_wc wc{};
    wc.wr_id = w.wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = IBV_WC_RECV;
    wc.vendor_err = vendor_syndrome(IBV_WC_WR_FLUSH_ERR);
    wc.qp_num = qp.ibv.qp_num;
    ++head;
    qp.rq.head.store(head, std::memory_order_release);
    push_completion(qp, *qp.recv_cq, wc, false);
  }
  s.inbound = InboundKind::None;
  s.recv_wqe_taken = false;
  s.reads_count = 0;
  s.ack_owed = false;
  s.nak_owed = false;
}

void enter_error(Engine& engine, Qp& qp) {
  engine.device().publish_port_counters();  // before any completion of the error is seen
  qp.state.store(IBV_QPS_ERR, std::memory_order_relaxed);
  flush_queues(qp);
  engine.activate(&qp);
}

}  // namespace vroce::core
