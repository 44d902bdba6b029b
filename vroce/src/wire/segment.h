// How a message of L bytes splits into packets at a path MTU: ONLY when L <= PMTU (zero bytes
// included), else FIRST and MIDDLE packets of exactly PMTU bytes and a LAST of 1..PMTU. One PSN
// per request packet; a READ REQUEST reserves ceil(L / PMTU) PSNs (at least one), which its
// responses use.
#pragma once

#include <cstdint>

#include "wire/opcode.h"

namespace vroce::wire {

// IBA's largest message: 2^31 bytes.
inline constexpr std::uint64_t kMaxMessageLength = std::uint64_t{1} << 31;

struct SegmentPlan {
  std::uint64_t length = 0;   // message length
  std::uint32_t pmtu = 0;     // payload bytes per full packet
  std::uint32_t packets = 0;  // >= 1

  // Position, payload size and byte offset of packet `index` (< packets).
  Segment segment(std::uint32_t index) const noexcept;
  std::uint32_t payload(std::uint32_t index) const noexcept;
  std::uint64_t offset(std::uint32_t index) const noexcept { return std::uint64_t{index} * pmtu; }
};

// A plan with packets == 0 means invalid arguments: pmtu not one of 256, 512, 1024, 2048, 4096,
// or length above kMaxMessageLength.
SegmentPlan plan_segments(std::uint64_t length, std::uint32_t pmtu) noexcept;

// PSNs a message uses: packets of plan_segments() (requests and READ responses alike), i.e.
// ceil(length / pmtu) with a minimum of 1; 0 when the arguments are invalid.
std::uint32_t psns_for_message(std::uint64_t length, std::uint32_t pmtu) noexcept;

}  // namespace vroce::wire
