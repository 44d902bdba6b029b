// Work-request ids: every work request the plugin posts carries, in its 64-bit wr_id, what its
// completion means, so a completion maps to its request by unpacking (no search):
//   bits  0..15  index   request slot (flush), send-group slot (send) or 0 (a receive, posted
//                        ahead: its QP's next sequence names its request)
//   bits 16..23  qp      index of the QP within the connection
//   bits 24..31  kind    WrKind
//   bits 32..63  sq_pos  for send-queue work requests: the QP's posted-WR count including this
//                        one, so a signaled completion retires every WR posted up to it
#pragma once

#include <cstdint>

namespace roce {

enum class WrKind : uint8_t {
  Invalid = 0,
  Recv = 1,       // zero-SGE receive consumed by the sender's WRITE WITH IMMEDIATE
  SendGroup = 2,  // the signaled WRITE WITH IMMEDIATE that ends one matched multi-receive
  CtsWrite = 3,   // a periodically signaled CTS write (only to retire send-queue entries)
  Flush = 4,      // the 1-byte RDMA READ of an iflush
  Fence = 5,      // a recovery epoch's marker behind a failed QP's queue (recovery_epoch.h)
};

struct WrId {
  WrKind kind = WrKind::Invalid;
  uint8_t qp = 0;
  uint16_t index = 0;
  uint32_t sq_pos = 0;
};

constexpr uint64_t pack_wr_id(WrKind kind, uint8_t qp, uint16_t index,
                              uint32_t sq_pos = 0) noexcept {
  return uint64_t{index} | (uint64_t{qp} << 16) | (uint64_t{static_cast<uint8_t>(kind)} << 24) |
         (uint64_t{sq_pos} << 32);
}

// The fields one at a time, for a side that expects one kind and needs no WrId.
constexpr bool wr_id_is(uint64_t wr_id, WrKind kind) noexcept {
  return static_cast<uint8_t>(wr_id >> 24) == static_cast<uint8_t>(kind);
}
constexpr uint16_t wr_id_index(uint64_t wr_id) noexcept {
  return static_cast<uint16_t>(wr_id & 0xffff);
}
constexpr uint8_t wr_id_qp(uint64_t wr_id) noexcept {
  return static_cast<uint8_t>((wr_id >> 16) & 0xff);
}
constexpr uint32_t wr_id_sq_pos(uint64_t wr_id) noexcept {
  return static_cast<uint32_t>(wr_id >> 32);
}

constexpr WrId unpack_wr_id(uint64_t wr_id) noexcept {
  WrId id;
  id.index = wr_id_index(wr_id);
  id.qp = wr_id_qp(wr_id);
  const auto kind = static_cast<uint8_t>((wr_id >> 24) & 0xff);
  id.kind = kind >= 1 && kind <= 5 ? static_cast<WrKind>(kind) : WrKind::Invalid;
  id.sq_pos = wr_id_sq_pos(wr_id);
  return id;
}

}  // namespace roce
