// The frames of a recovery epoch (docs/design.md, "Recovery epochs"), carried on the peer
// watch's kept handshake socket: how the two ends of a connection whose data QPs failed agree on
// a new set of QPs and on which messages the receiver has completed. Pure encoding and
// validation, no sockets and no verbs: the watcher reads the bytes (peer_watch.h), the comms act
// on the decoded frames.
//
//   receiver -> sender  EpochWanted  (its QPs failed: please start an epoch; or, its QPs
//                                      fine, a member it left out has its port back: please
//                                      take it back when you can)
//   sender -> receiver  EpochStart   (the sender's new QPs, its live members, the first
//                                      sequence it has not posted)
//   receiver -> sender  EpochReady   (the receiver's new QPs, what it completed below that
//                                      sequence, the clear-to-send entries of its irecvs in
//                                      flight rewritten for the new QPs)
//   sender -> receiver  EpochGo      (the sender's new QPs are connected: the receiver may write
//                                      clear-to-send slots through its own again)
//
// Each frame: the handshake's 4-byte length, its 12-byte header (handshake.h: magic, version,
// kind, body length) with kinds after the watch's Hello and Goodbye, and a body that starts with
// the listen nonce (u64) and the epoch (u32), little-endian like the handshake.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "net/handshake.h"
#include "roce/result.h"

namespace roce::net {

enum class EpochKind : uint16_t {
  Wanted = 7,
  Start = 8,
  Ready = 9,
  Go = 10
};  // after WatchSignal's

// At most this many bytes in one frame (header and body): EpochReady with 128 QPs and 256
// clear-to-send entries fits in 9.3 KiB.
inline constexpr size_t kMaxEpochFrameBytes = 16384;
// The window of sequences an EpochReady describes: the clear-to-send ring has 64 slots and a
// receive's slot is not written again while it is in flight, so the first incomplete sequence and
// the first one the sender has not posted are at most 64 apart.
inline constexpr uint64_t kEpochWindow = 64;
inline constexpr size_t kCtsEntryBytes = 32;        // one clear-to-send entry, opaque here
inline constexpr size_t kMaxEpochCtsEntries = 256;  // 32 receives x up to 8 buffers

// A QP of the new set: which member it is on, its QPN and starting PSN.
struct EpochQp {
  uint8_t member = 0;  // < kMaxMembers
  uint32_t qpn = 0;    // 1..kMaxQpn
  uint32_t psn = 0;    // 0..kMaxPsn
  bool operator==(const EpochQp&) const = default;
};

// Body after nonce and epoch: down_members u8 (a bitmask of the receiver's members whose ports
// it saw go down; may be 0 when only QPs failed), back_members u8 (non-zero: a rejoin request,
// the members the receiver left out for their ports, now ACTIVE again; its QPs did not fail).
struct EpochWanted {
  uint64_t nonce = 0;
  uint32_t epoch = 0;  // the newest epoch the receiver has seen (0: none yet)
  uint8_t down_members = 0;
  uint8_t back_members = 0;
  bool operator==(const EpochWanted&) const = default;
};

// Body after nonce and epoch: next_seq u64, live_members u8 (bitmask, non-zero), a ring rkey u32
// per live member (in member order), QP count u16, then per QP member u8, qpn u32, psn u32.
// Every QP is on a live member.
struct EpochStart {
  uint64_t nonce = 0;
  uint32_t epoch = 0;     // >= 1, higher than any before on this connection
  uint64_t next_seq = 0;  // the first sequence the sender has not posted
  uint8_t live_members = 0;
  // The keys of the sender's clear-to-send ring on each live member, in member order: the
  // receiver's clear-to-send writes go through its QP 0, whose member (the first one both ends
  // keep) may not be the handshake's first.
  std::vector<uint32_t> ring_rkeys;
  std::vector<EpochQp> qps;  // 1..kMaxQpsPerConnection
  bool operator==(const EpochStart&) const = default;
};

// Body after nonce and epoch: low_seq u64, next_seq u64 (EpochStart's, echoed), done u64, live
// members u8, QP count u16 and per QP member u8, qpn u32, psn u32 (as many as the start's, on the
// same members), entry count u16 and the entries (32 bytes each).
struct EpochReady {
  uint64_t nonce = 0;
  uint32_t epoch = 0;
  uint64_t low_seq = 0;   // the receiver's first incomplete sequence below next_seq, or next_seq
  uint64_t next_seq = 0;  // low_seq <= next_seq <= low_seq + kEpochWindow
  // Bit i: sequence low_seq + i is complete at the receiver; bits at or past next_seq - low_seq
  // are 0, and bit 0 is 0 unless low_seq == next_seq (low_seq is incomplete by definition).
  uint64_t done = 0;
  uint8_t live_members = 0;  // the members both ends will use: a subset of the start's
  std::vector<EpochQp> qps;
  std::vector<std::array<uint8_t, kCtsEntryBytes>> cts_entries;
  bool complete(uint64_t seq) const noexcept {
    return seq < low_seq || (seq < next_seq && ((done >> (seq - low_seq)) & 1U) != 0);
  }
  bool operator==(const EpochReady&) const = default;
};

// No body after nonce and epoch. Until it comes the receiver writes no clear-to-send slot through
// its new QPs: the sender's QPs stay in RESET, where a packet is dropped (and RC would only send
// it again after a whole local ACK timeout), until EpochReady gives them the receiver's QPNs.
struct EpochGo {
  uint64_t nonce = 0;
  uint32_t epoch = 0;
  bool operator==(const EpochGo&) const = default;
};

using EpochFrame = std::variant<EpochWanted, EpochStart, EpochReady, EpochGo>;

EpochKind kind_of(const EpochFrame& frame);
const char* epoch_kind_name(EpochKind kind);

// The kinds the decoder knows: WatchSignal's and EpochKind's share the header's kind field.
bool is_epoch_kind(uint16_t kind) noexcept;

struct EpochDecodeResult {
  EpochFrame frame;
  std::string error;  // empty when the frame is valid; else one line naming the field
  bool ok() const { return error.empty(); }
};

// Decodes one frame without its 4-byte length prefix (the header and the body), refusing any
// field out of range and a nonce that is not `nonce`.
EpochDecodeResult decode_epoch_frame(std::span<const uint8_t> bytes, uint64_t nonce);

// The same checks decode_epoch_frame applies; an empty string when the frame is valid.
std::string validate_epoch_frame(const EpochFrame& frame);

// The frame with its 4-byte length prefix, ready to write; fails (naming the field) when it
// would not pass validate_epoch_frame().
Result<std::vector<uint8_t>> encode_epoch_frame(const EpochFrame& frame);

}  // namespace roce::net
