// Building and parsing whole RoCEv2 UDP payloads: BTH, the extension headers the opcode calls
// for, payload, pad to a multiple of four bytes (PadCnt) and the ICRC.
//
// Sending: fill PacketHeaders (bth.opcode decides which of the other members go on the wire;
// bth.pad_count is computed), then build_packet() gathers the payload pieces into one buffer, or
// build_packet_split() writes only the headers and the pad+ICRC trailer so the payload can go by
// iovec without a copy. Neither allocates.
//
// Receiving: parse_packet() is one pure function from bytes to a result: it verifies the ICRC
// first (as a NIC does, so corruption anywhere counts as BadIcrc), then the structure, and
// returns a view into the buffer or the precise reason to drop. It never reads outside the
// span it is given. check_segment_length() adds the per-QP path MTU rules once the QP is known.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "wire/flow.h"
#include "wire/headers.h"
#include "wire/opcode.h"

namespace vroce::wire {

class IcrcHeaderCache;  // wire/icrc.h

using ByteSpan = std::span<const std::uint8_t>;

// RoCE's largest path MTU (IBV_MTU_4096); no packet carries more payload.
inline constexpr std::size_t kMaxPayload = 4096;
// BTH + the largest set of extension headers (AtomicETH, 28 bytes).
inline constexpr std::size_t kMaxHeaderSize = kBthSize + kAtomicEthSize;
// Up to three pad bytes and the ICRC.
inline constexpr std::size_t kMaxTrailerSize = 3 + kIcrcSize;
inline constexpr std::size_t kMaxPacketSize = kMaxHeaderSize + kMaxPayload + kMaxTrailerSize;
// The smallest packet: a BTH and an ICRC.
inline constexpr std::size_t kMinPacketSize = kBthSize + kIcrcSize;

// Every header a packet may carry; bth.opcode's traits say which are present.
struct PacketHeaders {
  Bth bth;
  Reth reth;
  AtomicEth atomic_eth;
  Aeth aeth;
  AtomicAckEth atomic_ack_eth;
  ImmDt imm;
  Ieth ieth;

  friend bool operator==(const PacketHeaders&, const PacketHeaders&) = default;
};

// ---- building ------------------------------------------------------------------------------

enum class BuildError : std::uint8_t {
  Ok,
  UnknownOpcode,      // bth.opcode is not an RC opcode or CNP
  PayloadNotAllowed,  // payload given for an opcode that carries none (READ REQUEST, ACK, ...)
  PayloadTooLarge,    // more than kMaxPayload bytes
  FieldOutOfRange,    // dest_qp or psn above 24 bits, tver not 0, or an AETH msn above 24 bits
  BufferTooSmall,     // the output buffer cannot hold the packet (or header/trailer part)
};

std::string_view build_error_name(BuildError error) noexcept;

struct BuildResult {
  BuildError error = BuildError::Ok;
  std::size_t size = 0;  // bytes written: the whole UDP payload

  bool ok() const noexcept { return error == BuildError::Ok; }
};

// Writes the complete UDP payload into `out` and returns its size. With `icrc_cache`, the ICRC's
// header state comes from it (icrc.h): the same bytes, fewer instructions.
BuildResult build_packet(const PacketHeaders& headers, std::span<const ByteSpan> payload,
                         const FlowAddress& flow, std::span<std::uint8_t> out,
                         IcrcHeaderCache* icrc_cache = nullptr) noexcept;

inline BuildResult build_packet(const PacketHeaders& headers, ByteSpan payload,
                                const FlowAddress& flow, std::span<std::uint8_t> out,
                                IcrcHeaderCache* icrc_cache = nullptr) noexcept {
  return build_packet(headers, std::span<const ByteSpan>(&payload, 1), flow, out, icrc_cache);
}

struct SplitBuildResult {
  BuildError error = BuildError::Ok;
  std::size_t header_size = 0;   // bytes written to header_out (BTH + extension headers)
  std::size_t trailer_size = 0;  // bytes written to trailer_out (pad + ICRC)

  bool ok() const noexcept { return error == BuildError::Ok; }
};

// The packet is header_out[0, header_size) + the payload pieces in order +
// trailer_out[0, trailer_size). header_out needs kMaxHeaderSize bytes at most, trailer_out
// kMaxTrailerSize.
SplitBuildResult build_packet_split(const PacketHeaders& headers, std::span<const ByteSpan> payload,
                                    const FlowAddress& flow, std::span<std::uint8_t> header_out,
                                    std::span<std::uint8_t> trailer_out) noexcept;

// A congestion notification packet for dest_qp, as ConnectX NICs send it (BECN set, PSN 0).
PacketHeaders make_cnp_headers(std::uint32_t dest_qp) noexcept;

// ---- parsing -------------------------------------------------------------------------------

enum class ParseError : std::uint8_t {
  Ok,
  Truncated,            // shorter than the BTH + the opcode's extension headers + ICRC
  BadIcrc,              // the stored ICRC does not match the packet
  BadTransportVersion,  // BTH TVer is not 0
  UnknownOpcode,        // not an RC opcode or CNP
  BadPadCount,          // PadCnt larger than the bytes after the headers, or set without payload
  LengthMismatch,       // size not a multiple of 4, bytes after a payload-less opcode, or (per
                        // QP) a FIRST/MIDDLE/LAST/ONLY length the path MTU or RETH rules forbid
  PayloadTooLarge,      // payload above the parse limit or (per QP) the path MTU
  BadAethSyndrome,      // AETH syndrome with bit 7 set, the reserved type, or a NAK code above 4
};

std::string_view parse_error_name(ParseError error) noexcept;
// One sentence for a drop log: the likely cause.
std::string_view parse_error_hint(ParseError error) noexcept;

struct PacketView {
  PacketHeaders headers;  // members of headers that are absent stay default-initialised
  const OpcodeTraits* traits = nullptr;
  ByteSpan payload;  // excludes pad and ICRC; points into the parsed buffer
  std::uint8_t pad_count = 0;
  std::uint32_t icrc = 0;  // as stored

  Opcode opcode() const noexcept { return static_cast<Opcode>(headers.bth.opcode); }
};

enum class IcrcPolicy : std::uint8_t {
  Verify,  // check against options.flow (every packet vroce receives); IPv4 accepts the ICRC
           // for ID 0 and for IDs 1..7 (segments of a GSO burst, icrc.h)
  Skip,    // structure only: fuzzing, or an ICRC already checked over captured headers
};

struct ParseOptions {
  IcrcPolicy icrc = IcrcPolicy::Verify;
  FlowAddress flow;  // the packet's flow as received (source = the sender)
  std::size_t max_payload = kMaxPayload;
  // Where the ICRC check takes the header state from (icrc.h); the verdict is the same.
  IcrcHeaderCache* icrc_cache = nullptr;
};

struct ParseResult {
  ParseError error = ParseError::Ok;
  PacketView view;  // valid only when error == Ok

  bool ok() const noexcept { return error == ParseError::Ok; }
};

ParseResult parse_packet(ByteSpan udp_payload, const ParseOptions& options) noexcept;

// The rules that need the QP's path MTU: FIRST and MIDDLE carry exactly pmtu bytes, LAST 1..pmtu,
// ONLY 0..pmtu; a RETH's DMA length equals the payload of an ONLY packet and exceeds pmtu on a
// FIRST; a READ REQUEST's DMA length is at most 2^31. Returns Ok, LengthMismatch or
// PayloadTooLarge. A responder answers these with a NAK (invalid request), not a silent drop.
ParseError check_segment_length(const PacketView& view, std::uint32_t pmtu) noexcept;

}  // namespace vroce::wire
