// Process-wide counters of vroce's RC engine: packets by opcode class, retransmissions, timeouts,
// NAKs, drops by reason, injected faults, completions by status and the live verbs objects (for
// leak checks). Tests read them through vroce_stats_json() (VROCE_PRIVATE_1.0); VROCE_STATS_FILE
// writes the same JSON at exit. Counters are relaxed atomics: each is exact, a snapshot of several
// is not atomic as a whole.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace vroce {

enum class PacketClass : uint8_t { Send, Write, ReadRequest, ReadResponse, Ack, Other, kCount };

enum class NakKind : uint8_t { Sequence, InvalidRequest, RemoteAccess, RemoteOperational, kCount };

enum class DropReason : uint8_t {
  // the wire parser's verdicts
  Truncated,
  BadIcrc,
  BadTransportVersion,
  UnknownOpcode,
  BadPadCount,
  LengthMismatch,
  PayloadTooLarge,
  BadAethSyndrome,
  // the datagram itself
  OversizeDatagram,  // larger than any RoCE packet (MSG_TRUNC)
  BadSource,         // no usable source/destination address
  // demultiplexing and state
  UnknownQpn,
  QpNotReady,          // the QP is not in RTR/RTS/SQD (requests) or RTS/SQD (responses)
  WrongPeer,           // source address or QPN is not the QP's connected peer
  DuplicateNakGap,     // ahead of ePSN after the one NAK of this gap was sent
  UnexpectedResponse,  // an ACK/response for no outstanding PSN
  Unsupported,         // atomics, CNP, SEND with invalidate: valid but not implemented
  TxSocketError,       // sendmmsg refused the packet (treated as wire loss)
  LinkDown,            // sent or received while the port is DOWN (an injected PORT_ERR)
  kCount
};

// EcnMark: a data packet left marked CE; EcnNotEct: one the ecn fault chose but could not mark,
// because its traffic class is not ECN-capable (ECN bits 00), as a switch would not mark it.
enum class FaultKind : uint8_t {
  Drop,
  Duplicate,
  Corrupt,
  Reorder,
  Delay,
  EcnMark,
  EcnNotEct,
  kCount
};

struct Counter {
  std::atomic<uint64_t> value{0};
  void add(uint64_t n = 1) noexcept { value.fetch_add(n, std::memory_order_relaxed); }
  uint64_t get() const noexcept { return value.load(std::memory_order_relaxed); }
  void reset() noexcept { value.store(0, std::memory_order_relaxed); }
};

struct Gauge {
  std::atomic<int64_t> value{0};
  void inc() noexcept { value.fetch_add(1, std::memory_order_relaxed); }
  void dec() noexcept { value.fetch_sub(1, std::memory_order_relaxed); }
  int64_t get() const noexcept { return value.load(std::memory_order_relaxed); }
};

// IBV_WC_SUCCESS .. IBV_WC_TM_RNDV_INCOMPLETE
inline constexpr size_t kWcStatusCount = IBV_WC_TM_RNDV_INCOMPLETE + 1;

struct Stats {
  Counter tx_packets[static_cast<size_t>(PacketClass::kCount)];
  Counter rx_packets[static_cast<size_t>(PacketClass::kCount)];
  Counter tx_payload_bytes;
  Counter rx_payload_bytes;
  Counter retransmitted_packets;   // request packets sent again (Go-Back-N, timeouts, RNR)
  Counter ack_timeouts;            // local ACK timer expirations
  Counter scheduling_stalls;       // times a progress thread found it had not been scheduled
  Counter spin_backoffs;           // spins given up because the progress thread was preempted
  Counter kick_waits;              // posts that found the engine taken and got it within the wait
  Counter kick_waits_expired;      // posts that waited for the engine in vain and queued their QP
  Counter progress_thread_cpu_us;  // CPU time of progress threads that have stopped
  Counter gso_sends;               // UDP GSO sends (UDP_SEGMENT), each a burst of 2..8 packets
  Counter gso_segments;            // packets sent in them
  Counter gro_buffers;             // received buffers the kernel coalesced (UDP_GRO), 2+ datagrams
  Counter gro_segments;            // datagrams in them
  Counter shm_sent;                // packets written into a peer's inbox (VROCE_WIRE=shm)
  Counter shm_received;            // packets read from this device's inbox
  Counter shm_ring_full;           // packets lost because the peer's ring was full
  Counter shm_abandoned;           // slots passed over: claimed by a sender that never filled them
  Counter shm_doorbells;           // empty datagrams sent to wake a peer's sleeping progress thread
  Counter cuda_copies_to_device;   // driver copies into CUDA memory (each with its synchronisation)
  Counter cuda_copies_from_device;  // driver copies out of CUDA memory
  Counter cuda_copy_bytes;          // bytes those copies moved
  Counter cuda_copies_by_kernel;    // of those, made by the copy helper's kernel
  Counter implied_naks;             // READ responses or ACKs that revealed lost responses
  Counter naks_sent[static_cast<size_t>(NakKind::kCount)];
  Counter naks_received[static_cast<size_t>(NakKind::kCount)];
  Counter rnr_naks_sent;
  Counter rnr_naks_received;
  Counter duplicate_requests;   // requests below ePSN, re-acknowledged (READs re-served)
  Counter ecn_marked_received;  // packets that arrived with ECN CE
  Counter cnps_sent;            // congestion notification packets sent (answering CE marks)
  Counter cnps_received;        // congestion notification packets received for a known QP
  Counter drops[static_cast<size_t>(DropReason::kCount)];
  Counter faults[static_cast<size_t>(FaultKind::kCount)];
  Counter completions[kWcStatusCount];
  Counter cq_overruns;
  Gauge live_pds;
  Gauge live_mrs;
  Gauge live_cqs;
  Gauge live_qps;
  Gauge live_comp_channels;
  Gauge live_engines;

  void count_drop(DropReason reason) noexcept { drops[static_cast<size_t>(reason)].add(); }
  void count_fault(FaultKind kind) noexcept { faults[static_cast<size_t>(kind)].add(); }
};

Stats& stats() noexcept;

// The counters as one JSON object (see docs/vroce.md for the fields).
std::string stats_json();

// Zeroes every counter; the live-object gauges are state, not counters, and stay.
void stats_reset() noexcept;

}  // namespace vroce
