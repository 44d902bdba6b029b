// Message segmentation at the path MTU (see segment.h).
#include "wire/segment.h"

#include "wire/mtu.h"

namespace vroce::wire {

SegmentPlan plan_segments(std::uint64_t length, std::uint32_t pmtu) noexcept {
  SegmentPlan p;
  if (!mtu_enum_from_bytes(pmtu) || length > kMaxMessageLength) {
    return p;
  }
  p.length = length;
  p.pmtu = pmtu;
  p.packets = length == 0 ? 1 : static_cast<std::uint32_t>((length + pmtu - 1) / pmtu);
  return p;
}

Segment SegmentPlan::segment(std::uint32_t index) const noexcept {
  if (index >= packets) {
    return Segment::None;
  }
  if (packets == 1) {
    return Segment::Only;
  }
  if (index == 0) {
    return Segment::First;
  }
  return index + 1 == packets ? Segment::Last : Segment::Middle;
}

std::uint32_t SegmentPlan::payload(std::uint32_t index) const noexcept {
  if (index >= packets) {
    return 0;
  }
  if (index + 1 < packets) {
    return pmtu;
  }
  return static_cast<std::uint32_t>(length - offset(index));
}

std::uint32_t psns_for_message(std::uint64_t length, std::uint32_t pmtu) noexcept {
  return plan_segments(length, pmtu).packets;
}

}  // namespace vroce::wire
