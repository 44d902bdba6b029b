// The RC opcode set of RoCEv2 (IBA transport prefix 0x00) and CNP, with table-driven traits:
// which extension headers follow the BTH, where the packet sits in its message, who sends it,
// whether it carries payload and whether its message consumes a receive WQE. The builder, the
// parser and the RC engine all decide from this one table, so they cannot disagree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vroce::wire {

enum class Opcode : std::uint8_t {
  SendFirst = 0x00,
  SendMiddle = 0x01,
  SendLast = 0x02,
  SendLastImm = 0x03,
  SendOnly = 0x04,
  SendOnlyImm = 0x05,
  WriteFirst = 0x06,
  WriteMiddle = 0x07,
  WriteLast = 0x08,
  WriteLastImm = 0x09,
  WriteOnly = 0x0A,
  WriteOnlyImm = 0x0B,
  ReadRequest = 0x0C,
  ReadResponseFirst = 0x0D,
  ReadResponseMiddle = 0x0E,
  ReadResponseLast = 0x0F,
  ReadResponseOnly = 0x10,
  Acknowledge = 0x11,
  AtomicAcknowledge = 0x12,
  CompareSwap = 0x13,
  FetchAdd = 0x14,
  SendLastInv = 0x16,
  SendOnlyInv = 0x17,
  Cnp = 0x81,
};

// Extension headers, as bits of OpcodeTraits::headers. On the wire they follow the BTH in the
// order of these bit values (RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH), which is the
// IBA order; CNP carries 16 reserved bytes instead.
enum HeaderBit : std::uint8_t {
  kHasReth = 1u << 0,
  kHasAtomicEth = 1u << 1,
  kHasAeth = 1u << 2,
  kHasAtomicAckEth = 1u << 3,
  kHasImmDt = 1u << 4,
  kHasIeth = 1u << 5,
  kHasCnpReserved = 1u << 6,
};

inline constexpr std::size_t kBthSize = 12;
inline constexpr std::size_t kRethSize = 16;
inline constexpr std::size_t kAtomicEthSize = 28;
inline constexpr std::size_t kAethSize = 4;
inline constexpr std::size_t kAtomicAckEthSize = 8;
inline constexpr std::size_t kImmDtSize = 4;
inline constexpr std::size_t kIethSize = 4;
inline constexpr std::size_t kCnpReservedSize = 16;
inline constexpr std::size_t kIcrcSize = 4;

// Position of a packet within its message.
enum class Segment : std::uint8_t { None, First, Middle, Last, Only };

// What the packet does; one value per family of opcodes.
enum class OpKind : std::uint8_t {
  Unknown,
  Send,
  Write,
  ReadRequest,
  ReadResponse,
  Acknowledge,
  AtomicAcknowledge,
  Atomic,
  Cnp,
};

// Who sends it: the requester (requests), the responder (responses) or, for CNP, the congestion
// notification point (neither).
enum class Direction : std::uint8_t { None, Request, Response, Notification };

struct OpcodeTraits {
  std::string_view name;  // "RC_SEND_FIRST" ...; "UNKNOWN" when not an RC/CNP opcode
  OpKind kind = OpKind::Unknown;
  Segment segment = Segment::None;
  Direction direction = Direction::None;
  std::uint8_t headers = 0;       // HeaderBit set
  std::uint8_t header_bytes = 0;  // total size of the extension headers after the BTH
  bool has_payload = false;       // may carry payload (ONLY packets may carry zero bytes)
  // The message consumes a receive WQE and this packet needs one to be available: every SEND
  // packet, and the WRITE packets that carry ImmDt.
  bool consumes_rwqe = false;

  constexpr bool known() const noexcept { return kind != OpKind::Unknown; }
  constexpr bool has(HeaderBit bit) const noexcept { return (headers & bit) != 0; }
  constexpr bool starts_message() const noexcept {
    return segment == Segment::First || segment == Segment::Only;
  }
  constexpr bool ends_message() const noexcept {
    return segment == Segment::Last || segment == Segment::Only;
  }
};

// Traits of any byte value; unknown opcodes get traits with known() == false.
const OpcodeTraits& opcode_traits(std::uint8_t opcode) noexcept;
inline const OpcodeTraits& opcode_traits(Opcode opcode) noexcept {
  return opcode_traits(static_cast<std::uint8_t>(opcode));
}

// "RC_RDMA_WRITE_ONLY" and so on; "UNKNOWN" for unknown values.
std::string_view opcode_name(std::uint8_t opcode) noexcept;

// The opcode of the packet at `segment` of a message of the given kind: the immediate or the
// invalidate rides on the LAST/ONLY packet, so (WriteWithImm, First) -> WriteFirst and
// (WriteWithImm, Last) -> WriteLastImm. std::nullopt for Segment::None.
enum class MessageKind : std::uint8_t {
  Send,
  SendWithImm,
  SendWithInv,
  Write,
  WriteWithImm,
  ReadResponse,
};
std::optional<Opcode> opcode_for(MessageKind kind, Segment segment) noexcept;

// Total size of the headers that precede the payload (BTH + extension headers).
inline std::size_t header_size(const OpcodeTraits& t) noexcept {
  return kBthSize + t.header_bytes;
}

}  // namespace vroce::wire
