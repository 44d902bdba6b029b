// The RC protocol steps the engine drives, all on the progress thread: the requester (send
// window, retransmission, completions of send WQEs), the responder (ePSN, RNR, placement into
// memory, ACK/NAK, READ responses), and the QP-level error and flush handling they share.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "core/qp_transport.h"
#include "wire/packet.h"

namespace vroce::core {

struct Qp;

class Engine;

// ---- requester (requester.cpp) -------------------------------------------------------------

// Emits up to *budget request packets (new WQEs and Go-Back-N resends). Returns true when it
// stopped only because the budget ran out (there is more to send right now).
bool requester_transmit(Engine& engine, Qp& qp, size_t* budget);

// An ACK, NAK, RNR NAK or READ response for this QP.
void requester_on_response(Engine& engine, Qp& qp, const wire::PacketView& packet);

// Fires the ACK timeout or ends an RNR wait when due.
// RNR waits end here; ACK timeouts are declared only with `timeouts` (the progress thread).
void requester_on_timer(Engine& engine, Qp& qp, bool timeouts);

// The requester's next deadline, if it has one.
bool requester_deadline(const Qp& qp, Clock::time_point* deadline);

// Reinitialises the requester for RTR->RTS from the QP's attributes.
void requester_start(Qp& qp);

// ---- responder (responder.cpp) -------------------------------------------------------------

void responder_on_request(Engine& engine, Qp& qp, const wire::PacketView& packet);

// Emits pending READ responses and then the owed ACK/NAK. Returns true when the budget ran out.
bool responder_transmit(Engine& engine, Qp& qp, size_t* budget);

// Reinitialises the responder for INIT->RTR.
void responder_start(Qp& qp);

// ---- QP-level (qp_control.cpp) -------------------------------------------------------------

// Moves the QP to ERR as the transport decided (not by ibv_modify_qp): flushes everything.
void enter_error(Engine& engine, Qp& qp);

// In ERR: completes every posted WQE with IBV_WC_WR_FLUSH_ERR, send queue and receive queue.
void flush_queues(Qp& qp);

// Completes send WQE `index` (the oldest not retired) with `status` and frees its slot when the
// completion is generated. Unsignaled successes generate none and keep their slots until a later
// signaled completion, as on real hardware.
void complete_send(Qp& qp, uint32_t index, ibv_wc_status status);

// Raises an affiliated asynchronous event for the QP.
void raise_qp_event(Qp& qp, ibv_event_type type);

// A local catastrophic error (a lost completion, a failed copy into device memory): the QP to
// ERR with IBV_EVENT_QP_FATAL, raised once however often it is called; the engine then flushes
// the QP's queues. Needs the engine.
void fail_qp_fatally(Qp& qp);

// mlx5's CQE syndrome for an error status, reported as vendor_err.
uint32_t vendor_syndrome(ibv_wc_status status) noexcept;

}  // namespace vroce::core
