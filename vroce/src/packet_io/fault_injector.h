// The faults VROCE_FAULTS asks for, decided per transmitted packet: drop (with a probability,
// every k-th data packet, or the first transmission of given PSNs), duplicate, corrupt (a byte
// flipped after the ICRC was computed, so the receiver's ICRC check drops it), reorder (held back
// behind the next packet), ECN CE marks (as a congested switch queue) and a fixed delay.
// Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <random>
#include <unordered_set>

#include "config/config.h"

namespace vroce::packet_io {

struct FaultVerdict {
  bool drop = false;
  bool duplicate = false;
  bool corrupt = false;
  bool reorder = false;
  bool ecn_mark = false;  // mark it ECN CE if it is ECN-capable (data packets only)
};

class FaultInjector {
 public:
  explicit FaultInjector(const FaultSpec& spec);

  bool enabled() const noexcept { return enabled_; }
  uint32_t delay_us() const noexcept { return spec_.delay_us; }

  // `data` is true for packets other than ACK/NAK; `request` for requester-to-responder ones.
  FaultVerdict decide(uint32_t dest_qpn, uint32_t psn, bool data, bool request);

  // Which byte of a `length`-byte packet to flip so the ICRC no longer matches: a payload byte
  // when there is one, else a BTH byte the ICRC covers.
  static size_t corrupt_offset(size_t length) noexcept;

 private:
  bool chance(double probability);

  FaultSpec spec_;
  bool enabled_;
  std::mt19937_64 random_;
  uint64_t data_packets_ = 0;
  std::unordered_set<uint32_t> psn_targets_;
  std::unordered_set<uint64_t> psns_dropped_;  // (qpn << 24 | psn) already dropped once
};

}  // namespace vroce::packet_io
