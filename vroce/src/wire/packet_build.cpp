// Packet building (see packet.h): headers in IBA order, gathered payload, pad and ICRC.
#include <cstring>

#include "wire/byte_order.h"
#include "wire/icrc.h"
#include "wire/packet.h"

namespace vroce::wire {
namespace {

struct Layout {
  const OpcodeTraits* traits = nullptr;
  std::size_t header_size = 0;
  std::size_t payload_size = 0;
  std::uint8_t pad = 0;
  std::size_t total = 0;
};

BuildError plan(const PacketHeaders& h, std::span<const ByteSpan> payload, Layout& out) noexcept {
  const OpcodeTraits& t = opcode_traits(h.bth.opcode);
  if (!t.known()) {
    return BuildError::UnknownOpcode;
  }
  if (h.bth.dest_qp > kQpnMask || h.bth.psn > kQpnMask || h.bth.tver != 0) {
    return BuildError::FieldOutOfRange;
  }
  if (t.has(kHasAeth) && h.aeth.msn > kQpnMask) {
    return BuildError::FieldOutOfRange;
  }
  std::size_t n = 0;
  for (const ByteSpan& piece : payload) {
    if (piece.size() > kMaxPayload - n) {
      return BuildError::PayloadTooLarge;
    }
    n += piece.size();
  }
  if (n != 0 && !t.has_payload) {
    return BuildError::PayloadNotAllowed;
  }
  out.traits = &t;
  out.header_size = header_size(t);
  out.payload_size = n;
  out.pad = static_cast<std::uint8_t>((4 - (n & 3)) & 3);
  out.total = out.header_size + n + out.pad + kIcrcSize;
  return BuildError::Ok;
}

// Writes BTH and extension headers; `out` holds at least layout.header_size bytes.
void write_headers(const PacketHeaders& h, const Layout& layout, std::uint8_t* out) noexcept {
  const OpcodeTraits& t = *layout.traits;
  Bth bth = h.bth;
  bth.pad_count = layout.pad;
  std::size_t off = encode_bth(bth, std::span<std::uint8_t>(out, kBthSize));
  auto rest = [&](std::size_t n) { return std::span<std::uint8_t>(out + off, n); };
  if (t.has(kHasReth)) {
    off += encode_reth(h.reth, rest(kRethSize));
  }
  if (t.has(kHasAtomicEth)) {
    off += encode_atomic_eth(h.atomic_eth, rest(kAtomicEthSize));
  }
  if (t.has(kHasAeth)) {
    off += encode_aeth(h.aeth, rest(kAethSize));
  }
  if (t.has(kHasAtomicAckEth)) {
    off += encode_atomic_ack_eth(h.atomic_ack_eth, rest(kAtomicAckEthSize));
  }
  if (t.has(kHasImmDt)) {
    off += encode_immdt(h.imm, rest(kImmDtSize));
  }
  if (t.has(kHasIeth)) {
    off += encode_ieth(h.ieth, rest(kIethSize));
  }
  if (t.has(kHasCnpReserved)) {
    std::memset(out + off, 0, kCnpReservedSize);
    off += kCnpReservedSize;
  }
}

}  // namespace

BuildResult build_packet(const PacketHeaders& headers, std::span<const ByteSpan> payload,
                         const FlowAddress& flow, std::span<std::uint8_t> out,
                         IcrcHeaderCache* icrc_cache) noexcept {
  Layout layout;
  if (const BuildError e = plan(headers, payload, layout); e != BuildError::Ok) {
    return {e, 0};
  }
  if (out.size() < layout.total) {
    return {BuildError::BufferTooSmall, 0};
  }

  std::uint8_t* p = out.data();
  write_headers(headers, layout, p);
  std::size_t off = layout.header_size;
  for (const ByteSpan& piece : payload) {
    if (!piece.empty()) {
      std::memcpy(p + off, piece.data(), piece.size());
    }
    off += piece.size();
  }
  std::memset(p + off, 0, layout.pad);
  off += layout.pad;

  // The BTH's byte 4 is masked in place for the ICRC and put back, so that headers and payload
  // are fed in one piece.
  const std::uint8_t bth_byte4 = p[4];
  p[4] = 0xFF;
  const std::uint32_t s = icrc_update(icrc_begin(icrc_cache, flow, layout.total), ByteSpan(p, off));
  p[4] = bth_byte4;
  store_le32(p + off, icrc_final(s));
  return {BuildError::Ok, layout.total};
}

SplitBuildResult build_packet_split(const PacketHeaders& headers, std::span<const ByteSpan> payload,
                                    const FlowAddress& flow, std::span<std::uint8_t> header_out,
                                    std::span<std::uint8_t> trailer_out) noexcept {
  Layout layout;
  if (const BuildError e = plan(headers, payload, layout); e != BuildError::Ok) {
    return {e, 0, 0};
  }
  const std::size_t trailer = layout.pad + kIcrcSize;
  if (header_out.size() < layout.header_size || trailer_out.size() < trailer) {
    return {BuildError::BufferTooSmall, 0, 0};
  }
  std::uint8_t* h = header_out.data();
  write_headers(headers, layout, h);
  std::uint32_t s = icrc_begin(flow, layout.total);
  s = icrc_update_bth(s, h);
  s = icrc_update(s, ByteSpan(h + kBthSize, layout.header_size - kBthSize));
  for (const ByteSpan& piece : payload) {
    s = icrc_update(s, piece);
  }
  std::uint8_t* t = trailer_out.data();
  std::memset(t, 0, layout.pad);
  s = icrc_update(s, ByteSpan(t, layout.pad));
  store_le32(t + layout.pad, icrc_final(s));
  return {BuildError::Ok, layout.header_size, trailer};
}

PacketHeaders make_cnp_headers(std::uint32_t dest_qp) noexcept {
  PacketHeaders h;
  h.bth.opcode = static_cast<std::uint8_t>(Opcode::Cnp);
  h.bth.becn = true;
  h.bth.dest_qp = dest_qp;
  h.bth.psn = 0;
  return h;
}

std::string_view build_error_name(BuildError error) noexcept {
  switch (error) {
    case BuildError::Ok:
      return "ok";
    case BuildError::UnknownOpcode:
      return "unknown opcode";
    case BuildError::PayloadNotAllowed:
      return "payload not allowed for this opcode";
    case BuildError::PayloadTooLarge:
      return "payload too large";
    case BuildError::FieldOutOfRange:
      return "field out of range";
    case BuildError::BufferTooSmall:
      return "buffer too small";
  }
  return "unknown";
}

}  // namespace vroce::wire
