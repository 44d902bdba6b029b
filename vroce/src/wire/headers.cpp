// Big-endian encoding and decoding of the IBA transport headers (see headers.h).
#include "wire/headers.h"

#include "wire/byte_order.h"

namespace vroce::wire {

std::size_t encode_bth(const Bth& h, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kBthSize) {
    return 0;
  }
  std::uint8_t* p = out.data();
  p[0] = h.opcode;
  p[1] = static_cast<std::uint8_t>((h.solicited ? 0x80 : 0) | (h.mig_req ? 0x40 : 0) |
                                   ((h.pad_count & 0x3) << 4) | (h.tver & 0xF));
  store_be16(p + 2, h.pkey);
  p[4] = static_cast<std::uint8_t>((h.fecn ? 0x80 : 0) | (h.becn ? 0x40 : 0));
  store_be24(p + 5, h.dest_qp & kQpnMask);
  p[8] = h.ack_req ? 0x80 : 0;
  store_be24(p + 9, h.psn & kQpnMask);
  return kBthSize;
}

std::optional<Bth> decode_bth(std::span<const std::uint8_t> in) noexcept {
  if (in.size() < kBthSize) {
    return std::nullopt;
  }
  const std::uint8_t* p = in.data();
  Bth h;
  h.opcode = p[0];
  h.solicited = (p[1] & 0x80) != 0;
  h.mig_req = (p[1] & 0x40) != 0;
  h.pad_count = static_cast<std::uint8_t>((p[1] >> 4) & 0x3);
  h.tver = static_cast<std::uint8_t>(p[1] & 0xF);
  h.pkey = load_be16(p + 2);
  h.fecn = (p[4] & 0x80) != 0;
  h.becn = (p[4] & 0x40) != 0;
  h.dest_qp = bth_dest_qp(p);
  h.ack_req = (p[8] & 0x80) != 0;
  h.psn = bth_psn(p);
  return h;
}

std::size_t encode_reth(const Reth& h, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kRethSize) {
    return 0;
  }
  store_be64(out.data(), h.va);
  store_be32(out.data() + 8, h.rkey);
  store_be32(out.data() + 12, h.dma_length);
  return kRethSize;
}

std::optional<Reth> decode_reth(std::span<const std::uint8_t> in) noexcept {
  if (in.size() < kRethSize) {
    return std::nullopt;
  }
  return Reth{load_be64(in.data()), load_be32(in.data() + 8), load_be32(in.data() + 12)};
}

std::size_t encode_immdt(const ImmDt& h, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kImmDtSize) {
    return 0;
  }
  store_le32(out.data(), h.be_value);  // already in network order in memory: copy the bytes
  return kImmDtSize;
}

std::optional<ImmDt> decode_immdt(std::span<const std::uint8_t> in) noexcept {
  if (in.size() < kImmDtSize) {
    return std::nullopt;
  }
  return ImmDt{load_le32(in.data())};
}

std::size_t encode_aeth(const Aeth& h, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kAethSize) {
    return 0;
  }
  out[0] = h.syndrome;
  store_be24(out.data() + 1, h.msn & kQpnMask);
  return kAethSize;
}

std::optional<Aeth> decode_aeth(std::span<const std::uint8_t> in) noexcept {
  if (in.size() < kAethSize) {
    return std::nullopt;
  }
  return Aeth{in[0], load_be24(in.data() + 1)};
}

std::size_t encode_atomic_eth(const AtomicEth& h, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kAtomicEthSize) {
    return 0;
  }
  store_be64(out.data(), h.va);
  store_be32(out.data() + 8, h.rkey);
  store_be64(out.data() + 12, h.swap_add);
  store_be64(out.data() + 20, h.compare);
  return kAtomicEthSize;
}

std::optional<AtomicEth> decode_atomic_eth(std::span<const std::uint8_t> in) noexcept {
  if (in.size() < kAtomicEthSize) {
    return std::nullopt;
  }
  return AtomicEth{load_be64(in.data()), load_be32(in.data() + 8), load_be64(in.data() + 12),
                   load_be64(in.data() + 20)};
}

std::size_t encode_atomic_ack_eth(const AtomicAckEth& h, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kAtomicAckEthSize) {
    return 0;
  }
  store_be64(out.data(), h.original);
  return kAtomicAckEthSize;
}

std::optional<AtomicAckEth> decode_atomic_ack_eth(std::span<const std::uint8_t> in) noexcept {
  if (in.size() < kAtomicAckEthSize) {
    return std::nullopt;
  }
  return AtomicAckEth{load_be64(in.data())};
}

std::size_t encode_ieth(const Ieth& h, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kIethSize) {
    return 0;
  }
  store_be32(out.data(), h.rkey);
  return kIethSize;
}

std::optional<Ieth> decode_ieth(std::span<const std::uint8_t> in) noexcept {
  if (in.size() < kIethSize) {
    return std::nullopt;
  }
  return Ieth{load_be32(in.data())};
}

}  // namespace vroce::wire
