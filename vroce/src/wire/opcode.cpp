// The opcode traits table (see opcode.h). Built at compile time from one row per known opcode;
// every other byte value maps to the "unknown" row.
#include "wire/opcode.h"

#include <array>

namespace vroce::wire {
namespace {

constexpr std::uint8_t header_bytes_of(std::uint8_t headers) {
  std::size_t n = 0;
  if (headers & kHasReth) {
    n += kRethSize;
  }
  if (headers & kHasAtomicEth) {
    n += kAtomicEthSize;
  }
  if (headers & kHasAeth) {
    n += kAethSize;
  }
  if (headers & kHasAtomicAckEth) {
    n += kAtomicAckEthSize;
  }
  if (headers & kHasImmDt) {
    n += kImmDtSize;
  }
  if (headers & kHasIeth) {
    n += kIethSize;
  }
  if (headers & kHasCnpReserved) {
    n += kCnpReservedSize;
  }
  return static_cast<std::uint8_t>(n);
}

struct Row {
  Opcode opcode;
  std::string_view name;
  OpKind kind;
  Segment segment;
  Direction direction;
  std::uint8_t headers;
  bool has_payload;
  bool consumes_rwqe;
};

constexpr auto F = Segment::First;
constexpr auto M = Segment::Middle;
constexpr auto L = Segment::Last;
constexpr auto O = Segment::Only;
constexpr auto N = Segment::None;
constexpr auto Req = Direction::Request;
constexpr auto Rsp = Direction::Response;

// clang-format off
constexpr Row kRows[] = {
  {Opcode::SendFirst,          "RC_SEND_FIRST",                     OpKind::Send,  F, Req, 0,                    true,  true},
  {Opcode::SendMiddle,         "RC_SEND_MIDDLE",                    OpKind::Send,  M, Req, 0,                    true,  true},
  {Opcode::SendLast,           "RC_SEND_LAST",                      OpKind::Send,  L, Req, 0,                    true,  true},
  {Opcode::SendLastImm,        "RC_SEND_LAST_WITH_IMMEDIATE",       OpKind::Send,  L, Req, kHasImmDt,            true,  true},
  {Opcode::SendOnly,           "RC_SEND_ONLY",                      OpKind::Send,  O, Req, 0,                    true,  true},
  {Opcode::SendOnlyImm,        "RC_SEND_ONLY_WITH_IMMEDIATE",       OpKind::Send,  O, Req, kHasImmDt,            true,  true},
  {Opcode::WriteFirst,         "RC_RDMA_WRITE_FIRST",               OpKind::Write, F, Req, kHasReth,             true,  false},
  {Opcode::WriteMiddle,        "RC_RDMA_WRITE_MIDDLE",              OpKind::Write, M, Req, 0,                    true,  false},
  {Opcode::WriteLast,          "RC_RDMA_WRITE_LAST",                OpKind::Write, L, Req, 0,                    true,  false},
  {Opcode::WriteLastImm,       "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", OpKind::Write, L, Req, kHasImmDt,            true,  true},
  {Opcode::WriteOnly,          "RC_RDMA_WRITE_ONLY",                OpKind::Write, O, Req, kHasReth,             true,  false},
  {Opcode::WriteOnlyImm,       "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", OpKind::Write, O, Req, kHasReth | kHasImmDt, true,  true},
  {Opcode::ReadRequest,        "RC_RDMA_READ_REQUEST",              OpKind::ReadRequest,  O, Req, kHasReth,      false, false},
  {Opcode::ReadResponseFirst,  "RC_RDMA_READ_RESPONSE_FIRST",       OpKind::ReadResponse, F, Rsp, kHasAeth,      true,  false},
  {Opcode::ReadResponseMiddle, "RC_RDMA_READ_RESPONSE_MIDDLE",      OpKind::ReadResponse, M, Rsp, 0,             true,  false},
  {Opcode::ReadResponseLast,   "RC_RDMA_READ_RESPONSE_LAST",        OpKind::ReadResponse, L, Rsp, kHasAeth,      true,  false},
  {Opcode::ReadResponseOnly,   "RC_RDMA_READ_RESPONSE_ONLY",        OpKind::ReadResponse, O, Rsp, kHasAeth,      true,  false},
  {Opcode::Acknowledge,        "RC_ACKNOWLEDGE",                    OpKind::Acknowledge,       N, Rsp, kHasAeth, false, false},
  {Opcode::AtomicAcknowledge,  "RC_ATOMIC_ACKNOWLEDGE",             OpKind::AtomicAcknowledge, N, Rsp, kHasAeth | kHasAtomicAckEth, false, false},
  {Opcode::CompareSwap,        "RC_CMP_SWAP",                       OpKind::Atomic, O, Req, kHasAtomicEth,       false, false},
  {Opcode::FetchAdd,           "RC_FETCH_ADD",                      OpKind::Atomic, O, Req, kHasAtomicEth,       false, false},
  {Opcode::SendLastInv,        "RC_SEND_LAST_WITH_INVALIDATE",      OpKind::Send,  L, Req, kHasIeth,             true,  true},
  {Opcode::SendOnlyInv,        "RC_SEND_ONLY_WITH_INVALIDATE",      OpKind::Send,  O, Req, kHasIeth,             true,  true},
  {Opcode::Cnp,                "CNP",                               OpKind::Cnp,   N, Direction::Notification, kHasCnpReserved, false, false},
};
// clang-format on

constexpr std::array<OpcodeTraits, 256> make_table() {
  std::array<OpcodeTraits, 256> table{};
  for (auto& t : table) {
    t.name = "UNKNOWN";
  }
  for (const Row& r : kRows) {
    OpcodeTraits& t = table[static_cast<std::uint8_t>(r.opcode)];
    t.name = r.name;
    t.kind = r.kind;
    t.segment = r.segment;
    t.direction = r.direction;
    t.headers = r.headers;
    t.header_bytes = header_bytes_of(r.headers);
    t.has_payload = r.has_payload;
    t.consumes_rwqe = r.consumes_rwqe;
  }
  return table;
}

constexpr std::array<OpcodeTraits, 256> kTable = make_table();

// The IBA header sizes every known opcode must have; a typo in a row above fails the build.
static_assert(kTable[0x0B].header_bytes == 20);  // WRITE_ONLY_IMM: RETH + ImmDt
static_assert(kTable[0x12].header_bytes == 12);  // ATOMIC_ACK: AETH + AtomicAckETH
static_assert(kTable[0x13].header_bytes == 28);  // CMP_SWAP: AtomicETH
static_assert(kTable[0x81].header_bytes == 16);  // CNP: reserved
static_assert(!kTable[0x15].known() && !kTable[0x18].known() && !kTable[0x24].known());

}  // namespace

const OpcodeTraits& opcode_traits(std::uint8_t opcode) noexcept {
  return kTable[opcode];
}

std::string_view opcode_name(std::uint8_t opcode) noexcept {
  return kTable[opcode].name;
}

std::optional<Opcode> opcode_for(MessageKind kind, Segment segment) noexcept {
  switch (kind) {
    case MessageKind::Send:
    case MessageKind::SendWithImm:
    case MessageKind::SendWithInv:
      switch (segment) {
        case Segment::First:
          return Opcode::SendFirst;
        case Segment::Middle:
          return Opcode::SendMiddle;
        case Segment::Last:
          return kind == MessageKind::Send          ? Opcode::SendLast
                 : kind == MessageKind::SendWithImm ? Opcode::SendLastImm
                                                    : Opcode::SendLastInv;
        case Segment::Only:
          return kind == MessageKind::Send          ? Opcode::SendOnly
                 : kind == MessageKind::SendWithImm ? Opcode::SendOnlyImm
                                                    : Opcode::SendOnlyInv;
        case Segment::None:
          return std::nullopt;
      }
      break;
    case MessageKind::Write:
    case MessageKind::WriteWithImm: {
      const bool imm = kind == MessageKind::WriteWithImm;
      switch (segment) {
        case Segment::First:
          return Opcode::WriteFirst;
        case Segment::Middle:
          return Opcode::WriteMiddle;
        case Segment::Last:
          return imm ? Opcode::WriteLastImm : Opcode::WriteLast;
        case Segment::Only:
          return imm ? Opcode::WriteOnlyImm : Opcode::WriteOnly;
        case Segment::None:
          return std::nullopt;
      }
      break;
    }
    case MessageKind::ReadResponse:
      switch (segment) {
        case Segment::First:
          return Opcode::ReadResponseFirst;
        case Segment::Middle:
          return Opcode::ReadResponseMiddle;
        case Segment::Last:
          return Opcode::ReadResponseLast;
        case Segment::Only:
          return Opcode::ReadResponseOnly;
        case Segment::None:
          return std::nullopt;
      }
      break;
  }
  return std::nullopt;
}

}  // namespace vroce::wire
