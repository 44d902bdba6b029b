// Recovery epochs (docs/design.md, "Recovery epochs"): what both ends of a connection keep to
// replace their data QPs after a failure (a member port of a virtual NIC lost, or the only port
// down for longer than the retry budget) and to agree on which messages the receiver completed.
// The comms' state machines are in send_recovery.cpp and recv_recovery.cpp; this header holds
// what they share and the pure arithmetic, which is unit-tested without a device.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/epoch_frames.h"

namespace roce {

namespace verbs {
class QueuePair;
}  // namespace verbs

// How an epoch makes data QPs again. Connection setup (core/connect) knows the link and builds
// it; the data path sits below connect/ and cannot call it otherwise.
struct QpRemaker {
  // A new data QP on member m, on that member's CQ, with the capacities of the comm's first
  // ones; in RESET. Throws verbs::VerbsError.
  std::function<std::unique_ptr<verbs::QueuePair>(int member)> create;
  // RESET -> RTS against the peer's QP `peer_qpn` (starting PSN `peer_psn`) through member m,
  // with the class, SL, MTU and timeouts the handshake agreed. Throws verbs::VerbsError.
  std::function<void(verbs::QueuePair& qp, int member, uint32_t peer_qpn, uint32_t peer_psn,
                     uint32_t local_psn)>
      connect;
};

// What connection setup decided for one comm.
struct RecoverySetup {
  bool enabled = false;    // NCCL_ROCE_FAILOVER, the peer watch on, and a peer that speaks epochs
  std::string off_reason;  // why not, said once when a failure could have been recovered
  int timeout_s = 300;     // NCCL_ROCE_RECOVERY_TIMEOUT_S
  uint64_t nonce = 0;      // the listen nonce every epoch frame carries
  QpRemaker remaker;
};

// Where a comm stands in an epoch. The sender starts epochs and the receiver answers them.
enum class EpochPhase : uint8_t {
  Normal,           // data flows on the QPs of the newest epoch (or the handshake's)
  WaitingForPort,   // QPs fenced; no member's port is ACTIVE yet (a one-port NIC's outage)
  WaitingForReady,  // sender: EpochStart sent, its new QPs in RESET until EpochReady
  WaitingForStart,  // receiver: QPs fenced, EpochWanted sent
  WaitingForGo,     // receiver: EpochReady sent, its new QPs in RTS; no clear-to-send until Go
};
const char* epoch_phase_name(EpochPhase phase) noexcept;

// The receiver's record of what it completed below the sender's next sequence: `low`, its first
// incomplete sequence (or next_seq), and bit i of `done` for sequence low + i. `incomplete`: the
// sequences of its receives still in flight (any order; those at or past next_seq are ignored).
struct CompletedRecord {
  uint64_t low = 0;
  uint64_t done = 0;
};
CompletedRecord completed_record(uint64_t next_seq, std::span<const uint64_t> incomplete) noexcept;

// The first sequence at or after `from` that lane `lane` of `lanes` carries: where a new QP (or
// a lane's QPs, when messages are split) starts counting its messages (core/datapath/
// size_split.h: qp_of_message).
uint64_t first_seq_of_lane(uint64_t from, int lane, int lanes) noexcept;

// The members whose bits are set in `mask`, in order.
std::vector<int> members_of_mask(uint8_t mask);

// Shared bookkeeping of one comm's epochs (cold: nothing here is read on the data path).
struct RecoveryState {
  explicit RecoveryState(RecoverySetup s);
  ~RecoveryState();  // out of line: it destroys QueuePairs
  RecoverySetup setup;
  EpochPhase phase = EpochPhase::Normal;
  uint32_t epoch = 0;  // the newest epoch started (sender) or answered (receiver)
  std::chrono::steady_clock::time_point began;     // the failure that opened this recovery
  std::chrono::steady_clock::time_point deadline;  // waiting for a port ends here
  std::string cause;                               // that failure, for the WARN and errors
  // Members left out for their ports: the sender's, down when it started the epoch; the
  // receiver's, those the sender offered and it left out (it asks for them back, EpochWanted).
  uint8_t down_members = 0;
  // The sender's record of members the receiver left out for its own ports: not taken back
  // blindly (the sender cannot see those ports), only once the receiver asks (back_members),
  // which it also records for the WARN.
  uint8_t peer_left_out = 0;
  uint8_t peer_back = 0;
  // Epochs in a row that ended before any message completed again; past kMaxFruitlessEpochs the
  // comm fails (a path that loses everything with every port up).
  int fruitless = 0;
  uint64_t messages_at_epoch = 0;
  bool restart_wanted = false;  // the peer asked for an epoch while this one was being agreed
  // A member left out is taken back (a rejoin epoch) once its port is ACTIVE, but not before
  // this time: after an epoch that left members out, 1 s, doubling up to a minute while the
  // peer keeps leaving them out (its own port down), so a rejoin it cannot take costs little.
  // The receiver, whose own ports the sender cannot see, asks for its members back on the same
  // backoff; the sender takes such a request at once.
  std::chrono::steady_clock::time_point next_rejoin;
  // The last look at the ports (ConnectedComm::members_up_paced): while a comm waits for one,
  // NCCL calls test() in a loop, and each look is a query to the device.
  std::chrono::steady_clock::time_point ports_seen_at;
  uint8_t ports_up = 0;
  std::chrono::milliseconds rejoin_backoff{0};
  // The next rejoin (or the receiver's next request for one) no sooner than the backoff, which
  // doubles from 1 s up to a minute; and the backoff started again, a rejoin due at once.
  void delay_next_rejoin(std::chrono::steady_clock::time_point now) noexcept;
  void rejoin_at_once(std::chrono::steady_clock::time_point now) noexcept;
  bool told_off = false;  // the off_reason was said
  // The sender's new QPs between EpochStart and EpochReady, their members and starting PSNs.
  std::vector<std::unique_ptr<verbs::QueuePair>> new_qps;
  std::vector<uint8_t> new_members;
  std::vector<uint32_t> new_psns;
  // The receiver's EpochStart that waits for one of its ports.
  std::optional<net::EpochStart> pending_start;
  // Totals for the stats and the close summary.
  uint64_t recoveries = 0;
  uint64_t recovered_us = 0;
  uint64_t resent = 0;
};

inline constexpr int kMaxFruitlessEpochs = 3;

}  // namespace roce
