// The IBA transport headers RoCEv2 carries in its UDP payload: BTH, RETH, ImmDt, AETH (with the
// ACK / RNR NAK / NAK syndrome helpers), AtomicETH, AtomicAckETH and IETH. Plain value structs in
// host byte order; encode_* writes the big-endian wire form and decode_* reads it, each checking
// the buffer size first (encode returns 0 and decode std::nullopt when it is too small).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "wire/byte_order.h"
#include "wire/opcode.h"

namespace vroce::wire {

inline constexpr std::uint32_t kQpnMask = 0xFFFFFF;
inline constexpr std::uint16_t kDefaultPkey = 0xFFFF;

// Base Transport Header. Byte 4 holds FECN/BECN plus six reserved bits and byte 8 AckReq plus
// seven reserved bits; reserved bits are sent as zero and ignored on receive.
struct Bth {
  std::uint8_t opcode = 0;
  bool solicited = false;
  bool mig_req = false;
  std::uint8_t pad_count = 0;  // 0..3
  std::uint8_t tver = 0;       // transport header version, 0 for IBA 1.x
  std::uint16_t pkey = kDefaultPkey;
  bool fecn = false;
  bool becn = false;
  std::uint32_t dest_qp = 0;  // 24 bits
  bool ack_req = false;
  std::uint32_t psn = 0;  // 24 bits

  friend bool operator==(const Bth&, const Bth&) = default;
};

// RDMA Extended Transport Header: the remote buffer of a WRITE or READ; dma_length is the length
// of the whole message.
struct Reth {
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint32_t dma_length = 0;

  friend bool operator==(const Reth&, const Reth&) = default;
};

// Immediate data, kept exactly as verbs keeps it: ibv_send_wr::imm_data and ibv_wc::imm_data are
// __be32, so the four bytes in memory are the four bytes on the wire and no swap ever happens.
struct ImmDt {
  std::uint32_t be_value = 0;

  friend bool operator==(const ImmDt&, const ImmDt&) = default;
};

// ACK Extended Transport Header: syndrome (bit 7 reserved, bits 6:5 type, bits 4:0 value) and
// the 24-bit message sequence number.
struct Aeth {
  std::uint8_t syndrome = 0;
  std::uint32_t msn = 0;

  friend bool operator==(const Aeth&, const Aeth&) = default;
};

struct AtomicEth {
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint64_t swap_add = 0;  // swap value (CMP_SWAP) or addend (FETCH_ADD)
  std::uint64_t compare = 0;

  friend bool operator==(const AtomicEth&, const AtomicEth&) = default;
};

struct AtomicAckEth {
  std::uint64_t original = 0;

  friend bool operator==(const AtomicAckEth&, const AtomicAckEth&) = default;
};

// Invalidate Extended Transport Header: the rkey that SEND WITH INVALIDATE invalidates.
struct Ieth {
  std::uint32_t rkey = 0;

  friend bool operator==(const Ieth&, const Ieth&) = default;
};

// ---- AETH syndrome ------------------------------------------------------------------------

enum class AethType : std::uint8_t { Ack = 0, RnrNak = 1, Reserved = 2, Nak = 3 };

enum class NakCode : std::uint8_t {
  PsnSequenceError = 0,
  InvalidRequest = 1,
  RemoteAccessError = 2,
  RemoteOperationalError = 3,
  InvalidRdRequest = 4,
};

// The credit code an ACK carries when the responder does not advertise end-to-end credits
// (RoCE NICs always send it).
inline constexpr std::uint8_t kCreditsInvalid = 0x1F;

constexpr Aeth make_ack(std::uint32_t msn, std::uint8_t credit_code = kCreditsInvalid) noexcept {
  return Aeth{static_cast<std::uint8_t>(credit_code & 0x1F), msn & kQpnMask};
}
constexpr Aeth make_rnr_nak(std::uint32_t msn, std::uint8_t rnr_timer_code) noexcept {
  return Aeth{static_cast<std::uint8_t>(0x20 | (rnr_timer_code & 0x1F)), msn & kQpnMask};
}
constexpr Aeth make_nak(std::uint32_t msn, NakCode code) noexcept {
  return Aeth{static_cast<std::uint8_t>(0x60 | static_cast<std::uint8_t>(code)), msn & kQpnMask};
}
constexpr AethType aeth_type(std::uint8_t syndrome) noexcept {
  return static_cast<AethType>((syndrome >> 5) & 0x3);
}
// Low five bits: credit code (ACK), RNR timer code (RNR NAK) or NAK code (NAK).
constexpr std::uint8_t aeth_value(std::uint8_t syndrome) noexcept {
  return syndrome & 0x1F;
}
// A syndrome a responder may send: bit 7 clear, type not reserved, NAK codes 0..4 only.
constexpr bool aeth_syndrome_valid(std::uint8_t syndrome) noexcept {
  if ((syndrome & 0x80) != 0) {
    return false;
  }
  switch (aeth_type(syndrome)) {
    case AethType::Ack:
    case AethType::RnrNak:
      return true;
    case AethType::Nak:
      return aeth_value(syndrome) <= static_cast<std::uint8_t>(NakCode::InvalidRdRequest);
    case AethType::Reserved:
      return false;
  }
  return false;
}

// ---- encode / decode --------------------------------------------------------------------

std::size_t encode_bth(const Bth& h, std::span<std::uint8_t> out) noexcept;
std::size_t encode_reth(const Reth& h, std::span<std::uint8_t> out) noexcept;
std::size_t encode_immdt(const ImmDt& h, std::span<std::uint8_t> out) noexcept;
std::size_t encode_aeth(const Aeth& h, std::span<std::uint8_t> out) noexcept;
std::size_t encode_atomic_eth(const AtomicEth& h, std::span<std::uint8_t> out) noexcept;
std::size_t encode_atomic_ack_eth(const AtomicAckEth& h, std::span<std::uint8_t> out) noexcept;
std::size_t encode_ieth(const Ieth& h, std::span<std::uint8_t> out) noexcept;

std::optional<Bth> decode_bth(std::span<const std::uint8_t> in) noexcept;
// Single BTH fields of a packet already known to hold a BTH (kBthSize bytes at `bth`), for the
// paths that need one field and not the whole decode: forming GSO bursts, the ICRC's PSN rule.
inline std::uint32_t bth_dest_qp(const std::uint8_t* bth) noexcept {
  return load_be24(bth + 5);
}
inline std::uint32_t bth_psn(const std::uint8_t* bth) noexcept {
  return load_be24(bth + 9);
}
std::optional<Reth> decode_reth(std::span<const std::uint8_t> in) noexcept;
std::optional<ImmDt> decode_immdt(std::span<const std::uint8_t> in) noexcept;
std::optional<Aeth> decode_aeth(std::span<const std::uint8_t> in) noexcept;
std::optional<AtomicEth> decode_atomic_eth(std::span<const std::uint8_t> in) noexcept;
std::optional<AtomicAckEth> decode_atomic_ack_eth(std::span<const std::uint8_t> in) noexcept;
std::optional<Ieth> decode_ieth(std::span<const std::uint8_t> in) noexcept;

}  // namespace vroce::wire
