// 24-bit packet sequence number arithmetic. PSNs wrap modulo 2^24 and are compared within a
// window of 2^23: `a` is before `b` when b - a (mod 2^24) lies in [1, 2^23).
#pragma once

#include <cstdint>

namespace vroce::wire {

inline constexpr std::uint32_t kPsnMask = 0xFFFFFF;
inline constexpr std::uint32_t kPsnModulus = 0x1000000;
inline constexpr std::uint32_t kPsnHalfWindow = 0x800000;

constexpr std::uint32_t psn_mask(std::uint32_t psn) noexcept {
  return psn & kPsnMask;
}

// psn + n (mod 2^24); n may be negative.
constexpr std::uint32_t psn_add(std::uint32_t psn, std::int64_t n) noexcept {
  return static_cast<std::uint32_t>((static_cast<std::int64_t>(psn) + n) & kPsnMask);
}

// Forward distance from `from` to `to`: how many increments reach `to` (0 .. 2^24-1).
constexpr std::uint32_t psn_distance(std::uint32_t from, std::uint32_t to) noexcept {
  return (to - from) & kPsnMask;
}

// Signed difference a - b within the window: in [-2^23, 2^23).
constexpr std::int32_t psn_diff(std::uint32_t a, std::uint32_t b) noexcept {
  const std::uint32_t d = psn_distance(b, a);
  return d < kPsnHalfWindow ? static_cast<std::int32_t>(d)
                            : static_cast<std::int32_t>(d) - static_cast<std::int32_t>(kPsnModulus);
}

constexpr bool psn_before(std::uint32_t a, std::uint32_t b) noexcept {
  return psn_diff(a, b) < 0;
}
constexpr bool psn_after(std::uint32_t a, std::uint32_t b) noexcept {
  return psn_diff(a, b) > 0;
}
constexpr bool psn_at_or_after(std::uint32_t a, std::uint32_t b) noexcept {
  return psn_diff(a, b) >= 0;
}

// True when psn lies in [first, first + count) modulo 2^24 (count <= 2^24).
constexpr bool psn_in_range(std::uint32_t psn, std::uint32_t first, std::uint32_t count) noexcept {
  return psn_distance(first, psn) < count;
}

// The responder's view of an incoming request PSN against its expected PSN (ePSN): in the
// 2^23 window after ePSN (inclusive) it is new (ePSN itself) or ahead (a gap: NAK sequence
// error); in the 2^23 window before it is a duplicate.
enum class PsnClass : std::uint8_t { Expected, Duplicate, Ahead };

constexpr PsnClass classify_psn(std::uint32_t psn, std::uint32_t expected) noexcept {
  const std::int32_t d = psn_diff(psn, expected);
  if (d == 0) {
    return PsnClass::Expected;
  }
  return d < 0 ? PsnClass::Duplicate : PsnClass::Ahead;
}

}  // namespace vroce::wire
