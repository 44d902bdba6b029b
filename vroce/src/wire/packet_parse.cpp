// Packet parsing (see packet.h). Every read is preceded by a size check on the span it reads
// from; the order of checks decides which error a malformed packet reports.
#include "wire/byte_order.h"
#include "wire/icrc.h"
#include "wire/packet.h"

namespace vroce::wire {
namespace {

// The largest DMA length IBA allows for one message.
constexpr std::uint64_t kMaxMessageSize = std::uint64_t{1} << 31;

// Decodes the extension headers the traits call for from `ext` (sized by the caller to exactly
// t.header_bytes).
void decode_extension_headers(const OpcodeTraits& t, ByteSpan ext, PacketHeaders& h) noexcept {
  std::size_t off = 0;
  if (t.has(kHasReth)) {
    h.reth = *decode_reth(ext.subspan(off));
    off += kRethSize;
  }
  if (t.has(kHasAtomicEth)) {
    h.atomic_eth = *decode_atomic_eth(ext.subspan(off));
    off += kAtomicEthSize;
  }
  if (t.has(kHasAeth)) {
    h.aeth = *decode_aeth(ext.subspan(off));
    off += kAethSize;
  }
  if (t.has(kHasAtomicAckEth)) {
    h.atomic_ack_eth = *decode_atomic_ack_eth(ext.subspan(off));
    off += kAtomicAckEthSize;
  }
  if (t.has(kHasImmDt)) {
    h.imm = *decode_immdt(ext.subspan(off));
    off += kImmDtSize;
  }
  if (t.has(kHasIeth)) {
    h.ieth = *decode_ieth(ext.subspan(off));
    off += kIethSize;
  }
}

// A segment of a UDP GSO burst left with IPv4 ID 1..7 (its place in the burst, icrc.h), which the
// receiver cannot see: for IPv4 those are the other ICRCs a packet may carry. `computed` is the
// ICRC for ID 0 (the socket path's own).
bool burst_segment_icrc(const FlowAddress& flow, ByteSpan udp_payload, std::uint32_t computed,
                        std::uint32_t stored) noexcept {
  return flow.family == IpFamily::V4 && icrc_matches_burst_id(udp_payload.size(), computed, stored);
}

}  // namespace

ParseResult parse_packet(ByteSpan udp_payload, const ParseOptions& options) noexcept {
  ParseResult r;
  const std::size_t len = udp_payload.size();
  if (len < kMinPacketSize) {
    r.error = ParseError::Truncated;
    return r;
  }
  const std::uint32_t stored = icrc_stored(udp_payload);
  if (options.icrc == IcrcPolicy::Verify) {
    std::uint32_t s = icrc_begin(options.icrc_cache, options.flow, len);
    s = icrc_update_bth(s, udp_payload.data());
    s = icrc_update(s, udp_payload.subspan(kBthSize, len - kBthSize - kIcrcSize));
    const std::uint32_t computed = icrc_final(s);
    if (computed != stored && !burst_segment_icrc(options.flow, udp_payload, computed, stored)) {
      r.error = ParseError::BadIcrc;
      return r;
    }
  }

  PacketView& v = r.view;
  v.icrc = stored;
  v.headers.bth = *decode_bth(udp_payload);
  const Bth& bth = v.headers.bth;
  if (bth.tver != 0) {
    r.error = ParseError::BadTransportVersion;
    return r;
  }
  const OpcodeTraits& t = opcode_traits(bth.opcode);
  if (!t.known()) {
    r.error = ParseError::UnknownOpcode;
    return r;
  }
  v.traits = &t;
  const std::size_t hdr = header_size(t);
  if (len < hdr + kIcrcSize) {
    r.error = ParseError::Truncated;
    return r;
  }
  decode_extension_headers(t, udp_payload.subspan(kBthSize, t.header_bytes), v.headers);

  const std::size_t rest = len - hdr - kIcrcSize;  // payload + pad
  if (!t.has_payload) {
    if (bth.pad_count != 0) {
      r.error = ParseError::BadPadCount;
      return r;
    }
    if (rest != 0) {
      r.error = ParseError::LengthMismatch;
      return r;
    }
  } else {
    if (bth.pad_count > rest) {
      r.error = ParseError::BadPadCount;
      return r;
    }
    if ((rest & 3) != 0) {
      r.error = ParseError::LengthMismatch;
      return r;
    }
    if (rest - bth.pad_count > options.max_payload) {
      r.error = ParseError::PayloadTooLarge;
      return r;
    }
  }
  if (t.has(kHasAeth) && !aeth_syndrome_valid(v.headers.aeth.syndrome)) {
    r.error = ParseError::BadAethSyndrome;
    return r;
  }
  v.pad_count = bth.pad_count;
  v.payload = udp_payload.subspan(hdr, rest - bth.pad_count);
  return r;
}

ParseError check_segment_length(const PacketView& view, std::uint32_t pmtu) noexcept {
  if (view.traits == nullptr) {
    return ParseError::UnknownOpcode;
  }
  const OpcodeTraits& t = *view.traits;
  const std::size_t n = view.payload.size();
  if (t.has_payload) {
    if (n > pmtu) {
      return ParseError::PayloadTooLarge;
    }
    switch (t.segment) {
      case Segment::First:
      case Segment::Middle:
        if (n != pmtu) {
          return ParseError::LengthMismatch;
        }
        break;
      case Segment::Last:
        if (n == 0) {
          return ParseError::LengthMismatch;
        }
        break;
      case Segment::Only:
      case Segment::None:
        break;
    }
  }
  if (t.has(kHasReth)) {
    const std::uint32_t dma = view.headers.reth.dma_length;
    if (dma > kMaxMessageSize) {
      return ParseError::LengthMismatch;
    }
    if (t.kind == OpKind::Write) {
      if (t.segment == Segment::Only && dma != n) {
        return ParseError::LengthMismatch;
      }
      if (t.segment == Segment::First && dma <= pmtu) {
        return ParseError::LengthMismatch;
      }
    }
  }
  return ParseError::Ok;
}

std::string_view parse_error_name(ParseError error) noexcept {
  switch (error) {
    case ParseError::Ok:
      return "ok";
    case ParseError::Truncated:
      return "truncated";
    case ParseError::BadIcrc:
      return "bad ICRC";
    case ParseError::BadTransportVersion:
      return "bad transport version";
    case ParseError::UnknownOpcode:
      return "unknown opcode";
    case ParseError::BadPadCount:
      return "bad pad count";
    case ParseError::LengthMismatch:
      return "length mismatch";
    case ParseError::PayloadTooLarge:
      return "payload too large";
    case ParseError::BadAethSyndrome:
      return "bad AETH syndrome";
  }
  return "unknown";
}

std::string_view parse_error_hint(ParseError error) noexcept {
  switch (error) {
    case ParseError::Ok:
      return "";
    case ParseError::Truncated:
      return "the datagram is shorter than its opcode's headers plus ICRC: cut in transit or not "
             "RoCEv2 (is something else sending to UDP port 4791?)";
    case ParseError::BadIcrc:
      return "corrupted in transit (or by fault injection), or the sender covered different "
             "IP/UDP fields: an IPv4 ID other than 0 or, in a UDP GSO burst, the PSN modulo 8 "
             "(a connected UDP socket makes IDs non-zero: send unconnected with DF set)";
    case ParseError::BadTransportVersion:
      return "the BTH TVer field is not 0: not an IBA 1.x transport packet";
    case ParseError::UnknownOpcode:
      return "not an RC opcode or CNP: UC/UD/XRC traffic or a peer speaking another transport";
    case ParseError::BadPadCount:
      return "PadCnt does not fit the packet: a sender computing the pad incorrectly";
    case ParseError::LengthMismatch:
      return "the packet size breaks the segmentation rules: a sender using another path MTU "
             "(check both QPs' path_mtu) or a bad RETH length";
    case ParseError::PayloadTooLarge:
      return "more payload than the path MTU allows: the peers disagree on path_mtu";
    case ParseError::BadAethSyndrome:
      return "the AETH syndrome uses reserved encodings: a responder bug";
  }
  return "";
}

}  // namespace vroce::wire
