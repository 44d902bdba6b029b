// The per-QP state of the RC transport that only the progress thread touches: the requester's
// send window (PSNs, the oldest unacknowledged PSN, retry and RNR counters, timers) and the
// responder's receive state (expected PSN, MSN, the message in progress, pending READ responses,
// the ACK or NAK owed). ibv_modify_qp changes it through a command the progress thread runs.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdint>

#include "wire/flow.h"

namespace vroce::core {

using Clock = std::chrono::steady_clock;

// Where a connected QP sends to, fixed at INIT->RTR.
struct PeerPath {
  sockaddr_storage addr{};  // the peer device's address, port 4791
  socklen_t addr_len = 0;
  wire::FlowAddress flow;  // this side -> peer, for the ICRC
  uint32_t dest_qpn = 0;
  uint32_t pmtu = 1024;       // payload bytes per full packet
  uint8_t traffic_class = 0;  // IP TOS / IPv6 traffic class of every packet
  uint8_t hop_limit = 64;     // IP TTL / IPv6 hop limit
};

// WQEs [sq_head, sq_assigned) have PSNs assigned (first_psn, psn_count), fixed for their life;
// the transmit cursor (sq_next, next_pkt, psn) walks them and then assigns new ones. Go-Back-N
// moves the cursor back; an ACK beyond the cursor moves it forward, so packets the responder
// already has are not sent again.
struct Requester {
  uint32_t sq_head = 0;       // oldest WQE not yet retired (SendQueue index, free-running)
  uint32_t sq_assigned = 0;   // one past the last WQE with PSNs assigned
  uint32_t sq_next = 0;       // cursor: WQE to transmit from
  uint32_t next_pkt = 0;      // cursor: packet index within wqe(sq_next)
  uint32_t psn = 0;           // cursor: PSN of the next packet to send
  uint32_t psn_end = 0;       // first PSN not assigned to any WQE yet
  uint32_t una = 0;           // oldest PSN not yet acknowledged
  uint32_t max_psn_sent = 0;  // highest PSN sent so far (READs: their last response PSN)
  bool any_sent = false;
  uint32_t reads_outstanding = 0;
  uint32_t packets_since_ack_req = 0;
  // Limits from RTR->RTS.
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t max_rd_atomic = 1;
  uint8_t retry_left = 7;
  uint8_t rnr_left = 7;
  std::chrono::nanoseconds ack_period{0};  // 0 = wait forever (timeout 0)
  Clock::time_point ack_deadline{};        // armed while packets are unacknowledged
  bool ack_timer_armed = false;
  // Scheduling delay already added to this ack_deadline (Engine::account_stall), bounded so
  // that a dead peer fails even on a host that never lets the engine run on time.
  std::chrono::nanoseconds ack_stall_credit{0};
  Clock::time_point rnr_until{};  // transmission paused until then after an RNR NAK
  bool rnr_waiting = false;
  uint32_t last_rewind_psn = 0;  // to ignore a late second NAK for a gap already rewound
  bool rewound = false;
  bool sqd_notify = false;          // SQD entered with en_sqd_async_notify
  bool drained_event_sent = false;  // SQD: IBV_EVENT_SQ_DRAINED raised
};

// A READ the responder is answering.
struct ReadResponse {
  uint32_t first_psn = 0;
  uint32_t packets = 0;
  uint32_t next_pkt = 0;
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t length = 0;
  uint32_t msn = 0;
};

enum class InboundKind : uint8_t { None, Send, Write };

struct Responder {
  uint32_t epsn = 0;               // expected PSN
  uint32_t msn = 0;                // messages completed, 24 bits
  bool gap_nak_sent = false;       // one NAK (sequence error or RNR) per gap
  bool first_packet_seen = false;  // for IBV_EVENT_COMM_EST
  uint8_t min_rnr_timer = 0;
  uint8_t max_dest_rd_atomic = 0;
  // The inbound message in progress.
  InboundKind inbound = InboundKind::None;
  uint64_t offset = 0;    // bytes of it placed so far
  uint64_t write_va = 0;  // RETH of a WRITE
  uint32_t write_rkey = 0;
  uint64_t write_length = 0;
  bool recv_wqe_taken = false;  // a SEND holds wqe(rq.head)
  // Owed control packet: an ACK up to ack_psn, or a NAK/RNR NAK (syndrome) at nak_psn. Sent
  // after pending READ responses so it never overtakes them.
  bool ack_owed = false;
  bool nak_owed = false;
  uint8_t nak_syndrome = 0;
  uint32_t nak_psn = 0;
  // READ responses queued (ring of up to 16, the device's max_qp_rd_atom).
  static constexpr uint32_t kMaxReads = 16;
  std::array<ReadResponse, kMaxReads> reads{};
  uint32_t reads_head = 0;
  uint32_t reads_count = 0;
  // The last CNP this QP sent, for the minimum interval between CNPs.
  bool cnp_sent = false;
  Clock::time_point last_cnp{};
};

struct QpTransport {
  PeerPath path;
  Requester req;
  Responder resp;
  bool active = false;      // on the engine's list of QPs with work to do
  bool registered = false;  // in the engine's QPN map
};

}  // namespace vroce::core
