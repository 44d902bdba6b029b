// The responder side of an RC QP: the expected PSN, duplicates (re-acknowledged, READs served
// again, never re-executed), one NAK per PSN gap, RNR NAKs when a SEND or WRITE WITH IMMEDIATE
// finds no receive WQE, placement of SEND payloads into receive WQEs and of WRITE payloads under
// the rkey, READ responses, receive completions, coalesced cumulative ACKs with the MSN, and the
// responder errors (remote access, invalid request, local length and protection) that NAK the
// requester and move this QP to ERR.
#include <algorithm>

#include "core/cq.h"
#include "core/device_state.h"
#include "core/engine.h"
#include "core/memory_access.h"
#include "core/protocol.h"
#include "core/qp.h"
#include "stats/stats.h"
#include "util/log.h"
#include "wire/psn.h"
#include "wire/segment.h"

namespace vroce::core {
namespace {

void emit_aeth_packet(Engine& engine, Qp& qp, uint32_t psn, const wire::Aeth& aeth) {
  wire::PacketHeaders h;
  h.bth.opcode = static_cast<uint8_t>(wire::Opcode::Acknowledge);
  h.bth.dest_qp = qp.tp.path.dest_qpn;
  h.bth.psn = psn;
  h.aeth = aeth;
  TxMeta meta;
  meta.dest_qpn = h.bth.dest_qp;
  meta.psn = psn;
  meta.cls = PacketClass::Ack;
  engine.emit(qp, h, {}, meta);
}

// A fatal responder error: NAK the requester at once (it must learn why) and enter ERR.
void fatal_nak(Engine& engine, Qp& qp, uint32_t psn, wire::NakCode code, ibv_event_type event,
               const char* why) {
  Responder& s = qp.tp.resp;
  VROCE_LOG(Info, "qp 0x%x: %s at PSN 0x%06x; NAK sent, the QP enters the error state",
            qp.ibv.qp_num, why, psn);
  NakKind kind = code == wire::NakCode::RemoteAccessError        ? NakKind::RemoteAccess
                 : code == wire::NakCode::RemoteOperationalError ? NakKind::RemoteOperational
                                                                 : NakKind::InvalidRequest;
  stats().naks_sent[static_cast<size_t>(kind)].add();
  emit_aeth_packet(engine, qp, psn, wire::make_nak(s.msn, code));
  // ERR first, so a program that reacts to the event already finds the QP in ERR.
  enter_error(engine, qp);
  raise_qp_event(qp, event);
}

void complete_recv(Qp& qp, ibv_wc_status status, ibv_wc_opcode opcode, uint32_t byte_len,
                   const wire::PacketView* packet) {
  uint32_t head = qp.rq.head.load(std::memory_order_relaxed);
  const RecvWqe& w = qp.rq.wqe(head);
  ibv_wc wc{};
  wc.wr_id = w.wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.vendor_err = vendor_syndrome(status);
  wc.byte_len = byte_len;
  wc.qp_num = qp.ibv.qp_num;
  wc.src_qp = qp.tp.path.dest_qpn;
  bool solicited = false;
  if (packet != nullptr && status == IBV_WC_SUCCESS) {
    if (packet->traits->has(wire::kHasImmDt)) {
      wc.imm_data = packet->headers.imm.be_value;
      wc.wc_flags |= IBV_WC_WITH_IMM;
    }
    solicited = packet->headers.bth.solicited;
  }
  // The message's bytes are in device memory before its completion can be seen.
  flush_device_writes();
  // Free the slot before publishing: a poller that sees the completion may post into it.
  qp.rq.head.store(head + 1, std::memory_order_release);
  qp.tp.resp.recv_wqe_taken = false;
  stats().completions[static_cast<size_t>(status)].add();
  if (!qp.recv_cq->push(wc, solicited)) {
    fail_qp_fatally(qp);
  }
}

bool recv_wqe_available(const Qp& qp) {
  return qp.rq.head.load(std::memory_order_relaxed) != qp.rq.tail.load(std::memory_order_acquire);
}

void owe_rnr(Qp& qp, uint32_t psn) {
  Responder& s = qp.tp.resp;
  stats().rnr_naks_sent.add();
  s.nak_owed = true;
  s.nak_syndrome = wire::make_rnr_nak(s.msn, s.min_rnr_timer).syndrome;
  s.nak_psn = psn;
  s.ack_owed = false;
  // Until the requester resends this PSN, later packets are a gap it already knows about.
  s.gap_nak_sent = true;
}

// Accepts a duplicate READ request: serve [psn, ...) again from the RETH it carries.
void reserve_read(Engine& engine, Qp& qp, const wire::PacketView& packet, bool duplicate) {
  Responder& s = qp.tp.resp;
  const wire::Reth& reth = packet.headers.reth;
  uint32_t psn = packet.headers.bth.psn;
  if (reth.dma_length > 0) {
    KeyError error;
    MrRef ref = qp.device->keys().lookup(reth.rkey, qp.pd, reth.va, reth.dma_length,
                                         IBV_ACCESS_REMOTE_READ, &error);
    if (!ref) {
      fatal_nak(engine, qp, psn, wire::NakCode::RemoteAccessError, IBV_EVENT_QP_ACCESS_ERR,
                "RDMA READ with an rkey, range or access that does not match a region");
      return;
    }
  }
  if (duplicate) {
    // The requester went back to this PSN (Go-Back-N) and asks again, one request per READ, for
    // everything from here on: responses queued for this PSN or later are superseded; those
    // before it stay. (Clearing the whole queue here served only the last of several re-sent
    // requests, so with many READs outstanding the first missing one was never answered.)
    uint32_t kept = 0;
    while (kept < s.reads_count) {
      const ReadResponse& queued = s.reads[(s.reads_head + kept) % Responder::kMaxReads];
      if (!wire::psn_before(wire::psn_add(queued.first_psn, queued.packets - 1), psn)) {
        break;
      }
      ++kept;
    }
    s.reads_count = kept;
    if (s.reads_count == Responder::kMaxReads) {
      // Only duplicates can overflow the ring (the requester keeps at most max_rd_atomic READs
      // outstanding): the oldest queued answer goes, the requester asks again if it needs it.
      s.reads_head = (s.reads_head + 1) % Responder::kMaxReads;
      --s.reads_count;
    }
  } else if (s.reads_count >= std::max<uint32_t>(s.max_dest_rd_atomic, 0) ||
             s.reads_count >= Responder::kMaxReads) {
    fatal_nak(engine, qp, psn, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR,
              "more RDMA READs outstanding than max_dest_rd_atomic allows");
    return;
  }
  ReadResponse& rr = s.reads[(s.reads_head + s.reads_count) % Responder::kMaxReads];
  rr.first_psn = psn;
  rr.packets = wire::psns_for_message(reth.dma_length, qp.tp.path.pmtu);
  rr.next_pkt = 0;
  rr.va = reth.va;
  rr.rkey = reth.rkey;
  rr.length = reth.dma_length;
  if (!duplicate) {
    s.msn = (s.msn + 1) & wire::kPsnMask;
    s.epsn = wire::psn_add(s.epsn, rr.packets);
  }
  rr.msn = s.msn;
  ++s.reads_count;
  engine.activate(&qp);
}

// An in-order RDMA WRITE (FIRST, MIDDLE, LAST or ONLY) at ePSN: checks, places its payload and,
// at its end, completes the receive a WRITE WITH IMMEDIATE consumes. Returns false when it did
// not advance ePSN.
bool execute_write(Engine& engine, Qp& qp, const wire::PacketView& packet) {
  Responder& s = qp.tp.resp;
  const wire::OpcodeTraits& t = *packet.traits;
  const wire::Bth& bth = packet.headers.bth;
  const bool ends = t.ends_message();
  // The immediate of a WRITE WITH IMMEDIATE needs a receive WQE. Without one, RNR NAK before
  // anything of the packet is taken: the requester sends the same packet again, and an ONLY
  // packet must then find no message begun (else the retry reads as a new message inside one).
  if (ends && t.consumes_rwqe && !recv_wqe_available(qp)) {
    owe_rnr(qp, bth.psn);
    return false;
  }
  uint32_t access = qp.attrs.qp_access_flags;
  if (t.starts_message()) {
    if ((access & IBV_ACCESS_REMOTE_WRITE) == 0) {
      fatal_nak(engine, qp, bth.psn, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR,
                "RDMA WRITE on a QP without IBV_ACCESS_REMOTE_WRITE");
      return false;
    }
    const wire::Reth& reth = packet.headers.reth;
    if (reth.dma_length > 0) {
      KeyError error;
      MrRef ref = qp.device->keys().lookup(reth.rkey, qp.pd, reth.va, reth.dma_length,
                                           IBV_ACCESS_REMOTE_WRITE, &error);
      if (!ref) {
        fatal_nak(engine, qp, bth.psn, wire::NakCode::RemoteAccessError, IBV_EVENT_QP_ACCESS_ERR,
                  "RDMA WRITE with an rkey, range or access that does not match a region");
        return false;
      }
    }
    s.inbound = InboundKind::Write;
    s.write_va = reth.va;
    s.write_rkey = reth.rkey;
    s.write_length = reth.dma_length;
    s.offset = 0;
  }
  if (s.offset + packet.payload.size() > s.write_length) {
    fatal_nak(engine, qp, bth.psn, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR,
              "RDMA WRITE packets carry more bytes than its RETH announced");
    return false;
  }
  if (ends && s.offset + packet.payload.size() != s.write_length) {
    fatal_nak(engine, qp, bth.psn, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR,
              "RDMA WRITE ended before the length its RETH announced");
    return false;
  }
  KeyError error = place_remote(qp.device->keys(), qp.pd, s.write_rkey, s.write_va + s.offset,
                                IBV_ACCESS_REMOTE_WRITE, packet.payload, &qp);
  if (error != KeyError::None) {
    fatal_nak(engine, qp, bth.psn, wire::NakCode::RemoteAccessError, IBV_EVENT_QP_ACCESS_ERR,
              "RDMA WRITE into a region that is no longer registered");
    return false;
  }
  s.offset += packet.payload.size();
  if (ends) {
    s.inbound = InboundKind::None;
    s.msn = (s.msn + 1) & wire::kPsnMask;
    if (t.consumes_rwqe) {
      complete_recv(qp, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
                    static_cast<uint32_t>(s.write_length), &packet);
    }
  }
  return true;
}

// An in-order SEND at ePSN: scatters its payload into the receive WQE at the head and completes
// it at the message's end. Returns false when it did not advance ePSN.
bool execute_send(Engine& engine, Qp& qp, const wire::PacketView& packet) {
  Responder& s = qp.tp.resp;
  const wire::OpcodeTraits& t = *packet.traits;
  const wire::Bth& bth = packet.headers.bth;
  if (t.starts_message()) {
    if (!recv_wqe_available(qp)) {
      owe_rnr(qp, bth.psn);
      return false;
    }
    s.inbound = InboundKind::Send;
    s.recv_wqe_taken = true;
    s.offset = 0;
  }
  uint32_t head = qp.rq.head.load(std::memory_order_relaxed);
  const RecvWqe& w = qp.rq.wqe(head);
  if (s.offset + packet.payload.size() > w.length) {
    complete_recv(qp, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, nullptr);
    fatal_nak(engine, qp, bth.psn, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR,
              "a SEND larger than the receive WQE's buffers (LOC_LEN_ERR on this side)");
    return false;
  }
  KeyError error =
      scatter(qp.device->keys(), qp.pd, qp.rq.sges(head), w.num_sge, s.offset, packet.payload, &qp);
  if (error != KeyError::None) {
    complete_recv(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, nullptr);
    fatal_nak(engine, qp, bth.psn, wire::NakCode::RemoteOperationalError, IBV_EVENT_QP_ACCESS_ERR,
              "a receive WQE whose SGE has a bad lkey, range or no LOCAL_WRITE (LOC_PROT_ERR "
              "on this side)");
    return false;
  }
  s.offset += packet.payload.size();
  if (t.ends_message()) {
    s.inbound = InboundKind::None;
    s.msn = (s.msn + 1) & wire::kPsnMask;
    complete_recv(qp, IBV_WC_SUCCESS, IBV_WC_RECV, static_cast<uint32_t>(s.offset), &packet);
  }
  return true;
}

// Handles the in-order request packet at ePSN. Returns false when it did not advance ePSN.
bool execute(Engine& engine, Qp& qp, const wire::PacketView& packet) {
  Responder& s = qp.tp.resp;
  const wire::OpcodeTraits& t = *packet.traits;
  const wire::Bth& bth = packet.headers.bth;
  uint32_t access = qp.attrs.qp_access_flags;

  if (t.kind != wire::OpKind::Send && t.kind != wire::OpKind::Write &&
      t.kind != wire::OpKind::ReadRequest) {
    stats().count_drop(DropReason::Unsupported);
    fatal_nak(engine, qp, bth.psn, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR,
              "an opcode this responder does not support (atomics, SEND with invalidate)");
    return false;
  }
  if (wire::check_segment_length(packet, qp.tp.path.pmtu) != wire::ParseError::Ok) {
    fatal_nak(engine, qp, bth.psn, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR,
              "a request whose length breaks the path MTU rules (do both sides use the same "
              "path_mtu?)");
    return false;
  }
  // Packets must continue the message in progress, and only FIRST/ONLY may start one.
  bool continues = t.segment == wire::Segment::Middle || t.segment == wire::Segment::Last;
  InboundKind kind = t.kind == wire::OpKind::Send    ? InboundKind::Send
                     : t.kind == wire::OpKind::Write ? InboundKind::Write
                                                     : InboundKind::None;
  if (continues != (s.inbound != InboundKind::None) || (continues && s.inbound != kind)) {
    fatal_nak(engine, qp, bth.psn, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR,
              "an opcode out of sequence (a MIDDLE/LAST without FIRST, or a new message "
              "inside another)");
    return false;
  }

  if (t.kind == wire::OpKind::ReadRequest) {
    if ((access & IBV_ACCESS_REMOTE_READ) == 0) {
      fatal_nak(engine, qp, bth.psn, wire::NakCode::InvalidRequest, IBV_EVENT_QP_REQ_ERR,
                "RDMA READ on a QP without IBV_ACCESS_REMOTE_READ");
      return false;
    }
    reserve_read(engine, qp, packet, false);
    s.gap_nak_sent = false;
    return false;  // ePSN already advanced by the READ's PSN count
  }

  if (t.kind == wire::OpKind::Write) {
    return execute_write(engine, qp, packet);
  }
  return execute_send(engine, qp, packet);
}

}  // namespace

void responder_start(Qp& qp) {
  Responder& s = qp.tp.resp;
  s = Responder{};
  s.epsn = qp.attrs.rq_psn & wire::kPsnMask;
  s.min_rnr_timer = qp.attrs.min_rnr_timer;
  s.max_dest_rd_atomic = qp.attrs.max_dest_rd_atomic;
}

void responder_on_request(Engine& engine, Qp& qp, const wire::PacketView& packet) {
  Responder& s = qp.tp.resp;
  const wire::Bth& bth = packet.headers.bth;
  if (!s.first_packet_seen) {
    s.first_packet_seen = true;
    if (qp.state.load(std::memory_order_relaxed) == IBV_QPS_RTR) {
      raise_qp_event(qp, IBV_EVENT_COMM_EST);
    }
  }
  switch (wire::classify_psn(bth.psn, s.epsn)) {
    case wire::PsnClass::Duplicate:
      stats().duplicate_requests.add();
      engine.port_counters().add(packet_io::PortCounter::DuplicateRequest);
      if (packet.traits->kind == wire::OpKind::ReadRequest) {
        reserve_read(engine, qp, packet, true);
      } else {
        s.ack_owed = true;
      }
      return;
    case wire::PsnClass::Ahead:
      engine.port_counters().add(packet_io::PortCounter::OutOfSequence);
      if (!s.gap_nak_sent) {
        s.gap_nak_sent = true;
        s.nak_owed = true;
        s.nak_syndrome = wire::make_nak(s.msn, wire::NakCode::PsnSequenceError).syndrome;
        s.nak_psn = s.epsn;
        stats().naks_sent[static_cast<size_t>(NakKind::Sequence)].add();
      } else {
        stats().count_drop(DropReason::DuplicateNakGap);
      }
      return;
    case wire::PsnClass::Expected:
      break;
  }
  if (execute(engine, qp, packet)) {
    s.epsn = wire::psn_add(s.epsn, 1);
    s.gap_nak_sent = false;
    s.nak_owed = false;
    if (bth.ack_req) {
      s.ack_owed = true;
    }
  }
}

bool responder_transmit(Engine& engine, Qp& qp, size_t* budget) {
  Responder& s = qp.tp.resp;
  uint32_t pmtu = qp.tp.path.pmtu;
  DeviceReadAhead ahead;  // READ responses from CUDA memory: one copy for the packets of this call
  while (s.reads_count > 0 && *budget > 0) {
    ReadResponse& rr = s.reads[s.reads_head];
    uint32_t k = rr.next_pkt;
    uint64_t offset = uint64_t{k} * pmtu;
    auto size = static_cast<uint32_t>(std::min<uint64_t>(pmtu, rr.length - offset));
    wire::Opcode opcode = rr.packets == 1       ? wire::Opcode::ReadResponseOnly
                          : k == 0              ? wire::Opcode::ReadResponseFirst
                          : k + 1 == rr.packets ? wire::Opcode::ReadResponseLast
                                                : wire::Opcode::ReadResponseMiddle;
    uint32_t psn = wire::psn_add(rr.first_psn, k);
    Gather gather;
    KeyError error = gather.collect_remote(qp.device->keys(), qp.pd, rr.rkey, rr.va + offset, size,
                                           engine.bounce(), &ahead, rr.length - offset);
    if (error != KeyError::None) {
      fatal_nak(engine, qp, psn, wire::NakCode::RemoteAccessError, IBV_EVENT_QP_ACCESS_ERR,
                "RDMA READ from a region that is no longer registered");
      return false;
    }
    wire::PacketHeaders h;
    h.bth.opcode = static_cast<uint8_t>(opcode);
    h.bth.dest_qp = qp.tp.path.dest_qpn;
    h.bth.psn = psn;
    h.aeth = wire::make_ack(rr.msn);
    TxMeta meta;
    meta.dest_qpn = h.bth.dest_qp;
    meta.psn = psn;
    meta.cls = PacketClass::ReadResponse;
    meta.payload = size;
    engine.emit(qp, h, gather.pieces(), meta);
    --*budget;
    if (++rr.next_pkt == rr.packets) {
      s.reads_head = (s.reads_head + 1) % Responder::kMaxReads;
      --s.reads_count;
    }
  }
  if (s.reads_count > 0) {
    return true;
  }
  if (s.nak_owed) {
    s.nak_owed = false;
    s.ack_owed = false;
    emit_aeth_packet(engine, qp, s.nak_psn, wire::Aeth{s.nak_syndrome, s.msn});
  } else if (s.ack_owed) {
    s.ack_owed = false;
    emit_aeth_packet(engine, qp, wire::psn_add(s.epsn, -1), wire::make_ack(s.msn));
  }
  return false;
}

}  // namespace vroce::core
