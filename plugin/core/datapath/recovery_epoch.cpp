// Recovery epochs: see recovery_epoch.h.
#include "core/datapath/recovery_epoch.h"

#include <algorithm>

#include "core/datapath/size_split.h"
#include "verbs/queue_pair.h"

namespace roce {

RecoveryState::RecoveryState(RecoverySetup s) : setup(std::move(s)) {}
RecoveryState::~RecoveryState() = default;

void RecoveryState::delay_next_rejoin(std::chrono::steady_clock::time_point now) noexcept {
  rejoin_backoff = std::clamp(rejoin_backoff * 2, std::chrono::milliseconds(1000),
                              std::chrono::milliseconds(60000));
  next_rejoin = now + rejoin_backoff;
}

void RecoveryState::rejoin_at_once(std::chrono::steady_clock::time_point now) noexcept {
  rejoin_backoff = std::chrono::milliseconds(0);
  next_rejoin = now;
}

const char* epoch_phase_name(EpochPhase phase) noexcept {
  switch (phase) {
    case EpochPhase::Normal:
      return "normal";
    case EpochPhase::WaitingForPort:
      return "waiting for a port";
    case EpochPhase::WaitingForReady:
      return "waiting for the receiver's EpochReady";
    case EpochPhase::WaitingForStart:
      return "waiting for the sender's EpochStart";
    case EpochPhase::WaitingForGo:
      return "waiting for the sender's EpochGo";
  }
  return "unknown";
}

CompletedRecord completed_record(uint64_t next_seq, std::span<const uint64_t> incomplete) noexcept {
  CompletedRecord record{next_seq, 0};
  for (const uint64_t seq : incomplete) {
    if (seq < record.low) {
      record.low = seq;
    }
  }
  // Every sequence in [low, next_seq) is complete unless a receive in flight still carries it.
  const uint64_t width = next_seq - record.low;
  for (uint64_t i = 1; i < width && i < net::kEpochWindow; ++i) {
    record.done |= uint64_t{1} << i;
  }
  for (const uint64_t seq : incomplete) {
    if (seq >= record.low && seq < next_seq && seq - record.low < net::kEpochWindow) {
      record.done &= ~(uint64_t{1} << (seq - record.low));
    }
  }
  return record;
}

uint64_t first_seq_of_lane(uint64_t from, int lane, int lanes) noexcept {
  if (lanes <= 1) {
    return from;
  }
  uint64_t seq = from;
  while (qp_of_message(seq, lanes) != lane) {
    ++seq;
  }
  return seq;
}

std::vector<int> members_of_mask(uint8_t mask) {
  std::vector<int> members;
  for (int m = 0; m < 8; ++m) {
    if (((mask >> m) & 1U) != 0) {
      members.push_back(m);
    }
  }
  return members;
}

}  // namespace roce
