// The requester side of an RC QP: segmentation of send WQEs into packets at the path MTU, the
// window of unacknowledged PSNs, AckReq placement, READ requests and the reassembly of their
// responses, fences and the max_rd_atomic limit, cumulative ACK processing and in-order
// completions, Go-Back-N on NAK sequence errors and implied NAKs, the local ACK timeout with
// retry_cnt, RNR waits with rnr_retry, and the error completions that end in the ERR state.
//
// retry_cnt semantics: the number of retransmissions after local ACK timeouts; 7 means seven
// retries, as on ConnectX (the IBA makes only rnr_retry 7 infinite). The count is restored
// whenever an ACK or response makes progress. NAK sequence errors do not consume retries.
#include <algorithm>
#include <cmath>

#include "config/config.h"
#include "core/device_state.h"
#include "core/engine.h"
#include "core/memory_access.h"
#include "core/protocol.h"
#include "core/qp.h"
#include "stats/stats.h"
#include "util/log.h"
#include "wire/mtu.h"
#include "wire/psn.h"
#include "wire/segment.h"

namespace vroce::core {
namespace {

// Unacknowledged request PSNs allowed in flight: sized to fit the receiver's socket buffer.
constexpr uint32_t kWindow = 1024;
// AckReq at least this often within a long message, so the window keeps moving.
constexpr uint32_t kAckReqInterval = 32;

bool is_read(const SendWqe& w) {
  return w.opcode == IBV_WR_RDMA_READ;
}

uint32_t last_psn(const SendWqe& w) {
  return wire::psn_add(w.first_psn, w.psn_count - 1);
}

std::chrono::nanoseconds scaled(std::chrono::nanoseconds period) {
  double scale = config().time_scale;
  auto ns = static_cast<double>(period.count()) * scale;
  return std::chrono::nanoseconds(static_cast<int64_t>(std::max(ns, 1000.0)));
}

void arm_ack_timer(Engine& engine, Requester& r) {
  if (r.ack_period.count() == 0) {
    r.ack_timer_armed = false;  // timeout 0: wait forever
    return;
  }
  r.ack_deadline = engine.now() + r.ack_period;
  r.ack_stall_credit = std::chrono::nanoseconds(0);
  r.ack_timer_armed = true;
}

// Sent packets not yet acknowledged (or assigned PSNs not yet answered, for READs).
bool outstanding(const Requester& r) {
  return r.any_sent && r.una != r.psn_end;
}

void update_una(Qp& qp) {
  Requester& r = qp.tp.req;
  if (r.sq_head == r.sq_assigned) {
    r.una = r.psn_end;
    return;
  }
  const SendWqe& w = qp.sq.wqe(r.sq_head);
  r.una = wire::psn_add(w.first_psn, w.done_psns);
}

// Places the transmit cursor at PSN `psn`, which lies within an assigned WQE (or is psn_end).
void move_cursor(Qp& qp, uint32_t psn) {
  Requester& r = qp.tp.req;
  for (uint32_t idx = r.sq_head; idx != r.sq_assigned; ++idx) {
    const SendWqe& w = qp.sq.wqe(idx);
    if (wire::psn_in_range(psn, w.first_psn, w.psn_count)) {
      r.sq_next = idx;
      r.next_pkt = wire::psn_distance(w.first_psn, psn);
      r.psn = psn;
      return;
    }
  }
  r.sq_next = r.sq_assigned;
  r.next_pkt = 0;
  r.psn = r.psn_end;
}

// Go-Back-N: transmit again from PSN `psn`.
void rewind(Engine& engine, Qp& qp, uint32_t psn) {
  Requester& r = qp.tp.req;
  move_cursor(qp, psn);
  r.rewound = true;
  r.last_rewind_psn = psn;
  r.packets_since_ack_req = 0;
  arm_ack_timer(engine, r);
  engine.activate(&qp);
}

// After acknowledgements: restart the timer, and skip the cursor past what the responder
// already has (an ACK can overtake a rewind that turned out unnecessary, e.g. on reordering).
void after_progress(Engine& engine, Qp& qp) {
  Requester& r = qp.tp.req;
  update_una(qp);
  if (wire::psn_before(r.psn, r.una)) {
    move_cursor(qp, r.una);
  }
  r.retry_left = r.retry_cnt;
  if (r.rnr_retry != 7) {
    r.rnr_left = r.rnr_retry;
  }
  if (outstanding(r)) {
    arm_ack_timer(engine, r);
  } else {
    r.ack_timer_armed = false;
  }
  engine.activate(&qp);
}

// Cumulative acknowledgement of every PSN up to and including `acked`. Returns true when it
// revealed lost READ responses (an implied NAK), after which the caller rewinds.
bool process_ack(Engine& engine, Qp& qp, uint32_t acked) {
  Requester& r = qp.tp.req;
  bool progress = false;
  bool implied_nak = false;
  while (r.sq_head != r.sq_assigned) {
    SendWqe& w = qp.sq.wqe(r.sq_head);
    if (is_read(w)) {
      // The responder executed the READ if it acknowledges a later PSN; its data must have
      // arrived by now, so missing responses were lost.
      if (wire::psn_at_or_after(acked, w.first_psn)) {
        implied_nak = true;
      }
      break;
    }
    if (wire::psn_before(acked, last_psn(w))) {
      if (wire::psn_at_or_after(acked, w.first_psn)) {
        uint32_t done = wire::psn_distance(w.first_psn, acked) + 1;
        if (done > w.done_psns) {
          w.done_psns = done;
          progress = true;
        }
      }
      break;
    }
    w.done_psns = w.psn_count;
    complete_send(qp, r.sq_head, IBV_WC_SUCCESS);
    progress = true;
  }
  if (progress) {
    after_progress(engine, qp);
  } else {
    update_una(qp);
  }
  return implied_nak;
}

void fail_head(Engine& engine, Qp& qp, ibv_wc_status status) {
  Requester& r = qp.tp.req;
  VROCE_LOG(Info, "qp 0x%x: send WQE completes with %s; the QP enters the error state",
            qp.ibv.qp_num, ibv_wc_status_str(status));
  // The port counters that explain the failure are published before its completion is seen.
  engine.device().publish_port_counters();
  complete_send(qp, r.sq_head, status);
  enter_error(engine, qp);
}

ibv_wc_status local_status(KeyError error) {
  return error == KeyError::None ? IBV_WC_SUCCESS : IBV_WC_LOC_PROT_ERR;
}

// Checks a WQE before its first packet: its SGEs (local read, or LOCAL_WRITE for a READ's
// destination) and its size.
ibv_wc_status check_wqe(Qp& qp, const SendWqe& w, uint32_t index) {
  if (w.length > qp.max_message) {
    return IBV_WC_LOC_LEN_ERR;
  }
  if (w.is_inline) {
    return IBV_WC_SUCCESS;
  }
  const KeyTable& keys = qp.device->keys();
  unsigned access = is_read(w) ? IBV_ACCESS_LOCAL_WRITE : 0;
  return local_status(check_sges(keys, qp.pd, qp.sq.sges(index), w.num_sge, access));
}

wire::MessageKind message_kind(ibv_wr_opcode opcode) {
  switch (opcode) {
    case IBV_WR_RDMA_WRITE:
      return wire::MessageKind::Write;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return wire::MessageKind::WriteWithImm;
    case IBV_WR_SEND_WITH_IMM:
      return wire::MessageKind::SendWithImm;
    default:
      return wire::MessageKind::Send;
  }
}

// Sends packet `index` of a SEND/WRITE WQE. Returns false on a local protection error.
bool send_data_packet(Engine& engine, Qp& qp, SendWqe& w, uint32_t wqe_index,
                      const wire::SegmentPlan& plan, uint32_t index, DeviceReadAhead& ahead) {
  Requester& r = qp.tp.req;
  wire::Segment segment = plan.segment(index);
  uint32_t size = plan.payload(index);
  uint64_t offset = plan.offset(index);

  wire::PacketHeaders h;
  h.bth.opcode = static_cast<uint8_t>(*wire::opcode_for(message_kind(w.opcode), segment));
  h.bth.dest_qp = qp.tp.path.dest_qpn;
  h.bth.psn = r.psn;
  bool last = segment == wire::Segment::Last || segment == wire::Segment::Only;
  h.bth.solicited = last && (w.send_flags & IBV_SEND_SOLICITED) != 0;
  bool window_edge = wire::psn_distance(r.una, r.psn) + 1 >= kWindow;
  h.bth.ack_req = last || ++r.packets_since_ack_req >= kAckReqInterval || window_edge;
  if (h.bth.ack_req) {
    r.packets_since_ack_req = 0;
  }
  h.reth.va = w.remote_addr;
  h.reth.rkey = w.rkey;
  h.reth.dma_length = static_cast<uint32_t>(w.length);
  h.imm.be_value = w.imm_be;

  Gather gather;
  wire::ByteSpan inline_piece;
  std::span<const wire::ByteSpan> payload;
  if (w.is_inline) {
    inline_piece = wire::ByteSpan(qp.sq.inline_data(wqe_index) + offset, size);
    payload = std::span<const wire::ByteSpan>(&inline_piece, 1);
  } else {
    KeyError error = gather.collect(qp.device->keys(), qp.pd, qp.sq.sges(wqe_index), w.num_sge,
                                    offset, size, engine.bounce(), &ahead);
    if (error != KeyError::None) {
      return false;
    }
    payload = gather.pieces();
  }
  TxMeta meta;
  meta.dest_qpn = h.bth.dest_qp;
  meta.psn = r.psn;
  meta.cls = w.opcode == IBV_WR_SEND || w.opcode == IBV_WR_SEND_WITH_IMM ? PacketClass::Send
                                                                         : PacketClass::Write;
  meta.request = true;
  meta.retransmission = r.any_sent && wire::psn_at_or_after(r.max_psn_sent, r.psn);
  meta.payload = size;
  engine.emit(qp, h, payload, meta);
  if (!r.any_sent || wire::psn_after(r.psn, r.max_psn_sent)) {
    r.max_psn_sent = r.psn;
    r.any_sent = true;
  }
  r.psn = wire::psn_add(r.psn, 1);
  return true;
}

void send_read_request(Engine& engine, Qp& qp, SendWqe& w) {
  Requester& r = qp.tp.req;
  uint64_t done = uint64_t{r.next_pkt} * qp.tp.path.pmtu;
  wire::PacketHeaders h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::ReadRequest);
  h.bth.dest_qp = qp.tp.path.dest_qpn;
  h.bth.psn = r.psn;
  h.reth.va = w.remote_addr + done;
  h.reth.rkey = w.rkey;
  h.reth.dma_length = static_cast<uint32_t>(w.length - done);
  TxMeta meta;
  meta.dest_qpn = h.bth.dest_qp;
  meta.psn = r.psn;
  meta.cls = PacketClass::ReadRequest;
  meta.request = true;
  meta.retransmission = r.any_sent && wire::psn_at_or_after(r.max_psn_sent, r.psn);
  engine.emit(qp, h, {}, meta);
  uint32_t last = wire::psn_add(w.first_psn, w.psn_count - 1);
  if (!r.any_sent || wire::psn_after(last, r.max_psn_sent)) {
    r.max_psn_sent = last;
    r.any_sent = true;
  }
  r.psn = wire::psn_add(last, 1);
}

}  // namespace

void requester_start(Qp& qp) {
  Requester& r = qp.tp.req;
  const ibv_qp_attr& a = qp.attrs;
  uint32_t head = r.sq_head;
  r = Requester{};
  r.sq_head = head;
  r.sq_assigned = head;
  r.sq_next = head;
  r.psn = a.sq_psn & wire::kPsnMask;
  r.psn_end = r.psn;
  r.una = r.psn;
  r.timeout = a.timeout;
  r.retry_cnt = a.retry_cnt;
  r.rnr_retry = a.rnr_retry;
  r.retry_left = a.retry_cnt;
  r.rnr_left = a.rnr_retry;
  r.max_rd_atomic = a.max_rd_atomic;
  auto period = wire::local_ack_timeout(a.timeout);
  r.ack_period = period && !period->infinite ? scaled(period->period) : std::chrono::nanoseconds(0);
}

bool requester_transmit(Engine& engine, Qp& qp, size_t* budget) {
  Requester& r = qp.tp.req;
  if (r.rnr_waiting) {
    return false;
  }
  bool draining = qp.state.load(std::memory_order_relaxed) == IBV_QPS_SQD;
  uint32_t tail = qp.sq.tail.load(std::memory_order_seq_cst);
  uint32_t pmtu = qp.tp.path.pmtu;
  DeviceReadAhead ahead;  // payloads from CUDA memory: one copy for the packets of this call
  while (*budget > 0) {
    if (r.sq_next == r.sq_assigned) {
      // The cursor reached new work: assign PSNs to the next WQE, if it may start.
      if (draining) {
        // SQD starts nothing new; the queue has drained once all started WQEs completed.
        if (r.sq_head == r.sq_assigned && !r.drained_event_sent && r.sqd_notify) {
          r.drained_event_sent = true;
          raise_qp_event(qp, IBV_EVENT_SQ_DRAINED);
        }
        return false;
      }
      if (r.sq_assigned == tail) {
        return false;
      }
      SendWqe& w = qp.sq.wqe(r.sq_assigned);
      if (wire::psn_distance(r.una, r.psn) >= kWindow) {
        return false;
      }
      if (is_read(w) && r.reads_outstanding >= std::max<uint32_t>(r.max_rd_atomic, 1)) {
        return false;
      }
      if ((w.send_flags & IBV_SEND_FENCE) != 0 && r.reads_outstanding > 0) {
        return false;
      }
      ibv_wc_status status = check_wqe(qp, w, r.sq_assigned);
      if (status != IBV_WC_SUCCESS) {
        // Completions stay in order: fail this WQE once everything before it has completed.
        if (r.sq_head != r.sq_assigned) {
          return false;
        }
        fail_head(engine, qp, status);
        return false;
      }
      w.started = true;
      w.first_psn = r.psn_end;
      w.psn_count = wire::psns_for_message(w.length, pmtu);
      w.done_psns = 0;
      r.psn_end = wire::psn_add(r.psn_end, w.psn_count);
      ++r.sq_assigned;
      r.next_pkt = 0;
      r.psn = w.first_psn;
      if (is_read(w)) {
        ++r.reads_outstanding;
      }
    }
    SendWqe& w = qp.sq.wqe(r.sq_next);
    if (wire::psn_distance(r.una, r.psn) >= kWindow) {
      return false;
    }
    if (!r.ack_timer_armed || !outstanding(r)) {
      arm_ack_timer(engine, r);
    }
    if (is_read(w)) {
      send_read_request(engine, qp, w);
      --*budget;
      ++r.sq_next;
      r.next_pkt = 0;
      continue;
    }
    wire::SegmentPlan plan = wire::plan_segments(w.length, pmtu);
    while (r.next_pkt<plan.packets&& * budget> 0) {
      if (wire::psn_distance(r.una, r.psn) >= kWindow) {
        return false;
      }
      if (!send_data_packet(engine, qp, w, r.sq_next, plan, r.next_pkt, ahead)) {
        // A region went away mid-message (deregistered): a local protection error, reported
        // once everything before this WQE has completed.
        if (r.sq_head != r.sq_next) {
          return false;
        }
        fail_head(engine, qp, IBV_WC_LOC_PROT_ERR);
        return false;
      }
      ++r.next_pkt;
      --*budget;
    }
    if (r.next_pkt == plan.packets) {
      ++r.sq_next;
      r.next_pkt = 0;
    }
  }
  return true;
}

namespace {

// A READ response for `psn`: retires what the READ followed, places the payload, or notices the
// responses lost before it.
void on_read_response(Engine& engine, Qp& qp, const wire::PacketView& packet, uint32_t psn) {
  Requester& r = qp.tp.req;
  // Everything before the READ this response answers was executed in order: retire it.
  bool progress = false;
  while (r.sq_head != r.sq_assigned) {
    SendWqe& w = qp.sq.wqe(r.sq_head);
    if (!is_read(w)) {
      if (wire::psn_before(last_psn(w), psn)) {
        w.done_psns = w.psn_count;
        complete_send(qp, r.sq_head, IBV_WC_SUCCESS);
        progress = true;
        continue;
      }
      stats().count_drop(DropReason::UnexpectedResponse);
      break;
    }
    uint32_t expected = wire::psn_add(w.first_psn, w.done_psns);
    if (wire::psn_in_range(psn, w.first_psn, w.psn_count)) {
      if (psn == expected) {
        uint64_t offset = uint64_t{w.done_psns} * qp.tp.path.pmtu;
        uint64_t want = std::min<uint64_t>(qp.tp.path.pmtu, w.length - offset);
        if (packet.payload.size() != want) {
          stats().count_drop(DropReason::LengthMismatch);
          break;
        }
        KeyError error = scatter(qp.device->keys(), qp.pd, qp.sq.sges(r.sq_head), w.num_sge, offset,
                                 packet.payload, &qp);
        if (error != KeyError::None) {
          fail_head(engine, qp, IBV_WC_LOC_PROT_ERR);
          return;
        }
        ++w.done_psns;
        progress = true;
        if (w.done_psns == w.psn_count) {
          complete_send(qp, r.sq_head, IBV_WC_SUCCESS);
        }
      } else if (wire::psn_after(psn, expected)) {
        stats().implied_naks.add();
        engine.port_counters().add(packet_io::PortCounter::ImpliedNakSeqErr);
        if (!(r.rewound && r.last_rewind_psn == expected && wire::psn_after(r.psn, expected))) {
          rewind(engine, qp, expected);
        }
      }
      break;
    }
    if (wire::psn_after(psn, last_psn(w))) {
      // Responses of a later READ while this one misses some: those were lost.
      stats().implied_naks.add();
      engine.port_counters().add(packet_io::PortCounter::ImpliedNakSeqErr);
      if (!(r.rewound && r.last_rewind_psn == expected && wire::psn_after(r.psn, expected))) {
        rewind(engine, qp, expected);
      }
    }
    break;
  }
  if (progress) {
    after_progress(engine, qp);
  }
}

// An ACK or NAK (AETH `syndrome`) for `psn`.
void on_acknowledge(Engine& engine, Qp& qp, uint8_t syndrome, uint32_t psn) {
  Requester& r = qp.tp.req;
  wire::AethType type = wire::aeth_type(syndrome);
  if (type == wire::AethType::Ack) {
    if (process_ack(engine, qp, psn)) {
      stats().implied_naks.add();
      engine.port_counters().add(packet_io::PortCounter::ImpliedNakSeqErr);
      rewind(engine, qp, r.una);
    }
    return;
  }
  // A NAK of PSN `psn` acknowledges everything before it.
  if (wire::psn_before(psn, r.una)) {
    return;  // stale: already past it
  }
  if (process_ack(engine, qp, wire::psn_add(psn, -1))) {
    stats().implied_naks.add();
    engine.port_counters().add(packet_io::PortCounter::ImpliedNakSeqErr);
    rewind(engine, qp, r.una);
    return;
  }
  if (psn != r.una) {
    return;
  }
  uint8_t value = wire::aeth_value(syndrome);
  if (type == wire::AethType::RnrNak) {
    stats().rnr_naks_received.add();
    engine.port_counters().add(packet_io::PortCounter::RnrNakRetryErr);
    if (r.rnr_retry != 7) {
      if (r.rnr_left == 0) {
        fail_head(engine, qp, IBV_WC_RNR_RETRY_EXC_ERR);
        return;
      }
      --r.rnr_left;
    }
    rewind(engine, qp, psn);
    auto wait = wire::rnr_timer(value).value_or(std::chrono::microseconds(655360));
    r.rnr_until = engine.now() + scaled(wait);
    r.rnr_waiting = true;
    r.ack_timer_armed = false;
    return;
  }
  auto code = static_cast<wire::NakCode>(value);
  switch (code) {
    case wire::NakCode::PsnSequenceError:
      stats().naks_received[static_cast<size_t>(NakKind::Sequence)].add();
      engine.port_counters().add(packet_io::PortCounter::PacketSeqErr);
      // A second NAK for a gap already being resent changes nothing.
      if (!(r.rewound && r.last_rewind_psn == psn && wire::psn_after(r.psn, psn))) {
        rewind(engine, qp, psn);
      }
      return;
    case wire::NakCode::InvalidRequest:
    case wire::NakCode::InvalidRdRequest:
      stats().naks_received[static_cast<size_t>(NakKind::InvalidRequest)].add();
      fail_head(engine, qp, IBV_WC_REM_INV_REQ_ERR);
      return;
    case wire::NakCode::RemoteAccessError:
      stats().naks_received[static_cast<size_t>(NakKind::RemoteAccess)].add();
      fail_head(engine, qp, IBV_WC_REM_ACCESS_ERR);
      return;
    case wire::NakCode::RemoteOperationalError:
      stats().naks_received[static_cast<size_t>(NakKind::RemoteOperational)].add();
      fail_head(engine, qp, IBV_WC_REM_OP_ERR);
      return;
  }
}

}  // namespace

void requester_on_response(Engine& engine, Qp& qp, const wire::PacketView& packet) {
  Requester& r = qp.tp.req;
  const wire::OpcodeTraits& traits = *packet.traits;
  uint32_t psn = packet.headers.bth.psn;
  // A response must be for a PSN already sent; one for a PSN before the oldest unacknowledged
  // one is a late duplicate and changes nothing.
  if (!r.any_sent || wire::psn_after(psn, r.max_psn_sent)) {
    stats().count_drop(DropReason::UnexpectedResponse);
    return;
  }
  if (!outstanding(r) || wire::psn_before(psn, wire::psn_add(r.una, -1))) {
    return;
  }

  if (traits.kind == wire::OpKind::ReadResponse) {
    on_read_response(engine, qp, packet, psn);
    return;
  }

  if (traits.kind != wire::OpKind::Acknowledge) {
    stats().count_drop(DropReason::Unsupported);
    return;
  }
  on_acknowledge(engine, qp, packet.headers.aeth.syndrome, psn);
}

void requester_on_timer(Engine& engine, Qp& qp, bool timeouts) {
  Requester& r = qp.tp.req;
  ibv_qp_state state = qp.state.load(std::memory_order_relaxed);
  if (state != IBV_QPS_RTS && state != IBV_QPS_SQD) {
    return;
  }
  if (r.rnr_waiting && engine.now() >= r.rnr_until) {
    r.rnr_waiting = false;
    arm_ack_timer(engine, r);
    engine.activate(&qp);
  }
  if (!timeouts || !r.ack_timer_armed || engine.now() < r.ack_deadline) {
    return;
  }
  if (!outstanding(r)) {
    r.ack_timer_armed = false;
    return;
  }
  stats().ack_timeouts.add();
  engine.port_counters().add(packet_io::PortCounter::LocalAckTimeoutErr);
  if (r.retry_left == 0) {
    VROCE_LOG(Info, "qp 0x%x: no ACK for PSN 0x%06x after %u retries; RETRY_EXC_ERR", qp.ibv.qp_num,
              r.una, r.retry_cnt);
    fail_head(engine, qp, IBV_WC_RETRY_EXC_ERR);
    return;
  }
  --r.retry_left;
  r.rewound = false;  // a timeout always resends
  rewind(engine, qp, r.una);
}

bool requester_deadline(const Qp& qp, Clock::time_point* deadline) {
  const Requester& r = qp.tp.req;
  ibv_qp_state state = qp.state.load(std::memory_order_relaxed);
  if (state != IBV_QPS_RTS && state != IBV_QPS_SQD) {
    return false;
  }
  bool any = false;
  if (r.ack_timer_armed) {
    *deadline = r.ack_deadline;
    any = true;
  }
  if (r.rnr_waiting && (!any || r.rnr_until < *deadline)) {
    *deadline = r.rnr_until;
    any = true;
  }
  return any;
}

}  // namespace vroce::core
