// Header encode/decode round trips, exact wire layouts, bounds checks and the AETH helpers.
#include "wire/headers.h"

#include <catch2/catch.hpp>

#include "test_util.h"
#include "wire/byte_order.h"

using namespace vroce::wire;
using vroce::wire::test::from_hex;

TEST_CASE("headers: BTH wire layout and round trip", "[wire][headers]") {
  Bth h;
  h.opcode = 0x0A;
  h.solicited = true;
  h.mig_req = false;
  h.pad_count = 2;
  h.pkey = 0x8001;
  h.fecn = false;
  h.becn = true;
  h.dest_qp = 0xABCDEF;
  h.ack_req = true;
  h.psn = 0x123456;
  std::array<std::uint8_t, 12> buf{};
  REQUIRE(encode_bth(h, buf) == kBthSize);
  CHECK(std::vector<std::uint8_t>(buf.begin(), buf.end()) ==
        from_hex("0aa08001 40abcdef 80123456"));
  CHECK(decode_bth(buf) == h);

  // Every flag alone, to catch swapped bits.
  for (int bit = 0; bit < 5; ++bit) {
    Bth f;
    f.solicited = bit == 0;
    f.mig_req = bit == 1;
    f.fecn = bit == 2;
    f.becn = bit == 3;
    f.ack_req = bit == 4;
    REQUIRE(encode_bth(f, buf) == kBthSize);
    CHECK(decode_bth(buf) == f);
  }
  for (std::uint8_t pad = 0; pad < 4; ++pad) {
    Bth f;
    f.pad_count = pad;
    f.tver = 0xF;
    REQUIRE(encode_bth(f, buf) == kBthSize);
    CHECK(decode_bth(buf) == f);
  }
}

TEST_CASE("headers: reserved BTH bits are ignored on receive", "[wire][headers]") {
  const auto wire = from_hex("04000000 3f000001 7f000002");  // 6 reserved bits in byte 4, 7 in 8
  const auto h = decode_bth(wire);
  REQUIRE(h);
  CHECK_FALSE(h->fecn);
  CHECK_FALSE(h->becn);
  CHECK_FALSE(h->ack_req);
  CHECK(h->dest_qp == 1);
  CHECK(h->psn == 2);
}

TEST_CASE("headers: RETH, AtomicETH, AtomicAckETH, IETH layouts", "[wire][headers]") {
  std::array<std::uint8_t, 28> buf{};
  const Reth reth{0x0102030405060708ull, 0x0A0B0C0D, 0x10203040};
  REQUIRE(encode_reth(reth, buf) == kRethSize);
  CHECK(std::vector<std::uint8_t>(buf.begin(), buf.begin() + 16) ==
        from_hex("0102030405060708 0a0b0c0d 10203040"));
  CHECK(decode_reth(buf) == reth);

  const AtomicEth atomic{0x1111222233334444ull, 0x55667788, 0x99AABBCCDDEEFF00ull,
                         0x0123456789ABCDEFull};
  REQUIRE(encode_atomic_eth(atomic, buf) == kAtomicEthSize);
  CHECK(std::vector<std::uint8_t>(buf.begin(), buf.end()) ==
        from_hex("1111222233334444 55667788 99aabbccddeeff00 0123456789abcdef"));
  CHECK(decode_atomic_eth(buf) == atomic);

  const AtomicAckEth ack{0xFEDCBA9876543210ull};
  REQUIRE(encode_atomic_ack_eth(ack, buf) == kAtomicAckEthSize);
  CHECK(std::vector<std::uint8_t>(buf.begin(), buf.begin() + 8) == from_hex("fedcba9876543210"));
  CHECK(decode_atomic_ack_eth(buf) == ack);

  const Ieth ieth{0xDEADBEEF};
  REQUIRE(encode_ieth(ieth, buf) == kIethSize);
  CHECK(std::vector<std::uint8_t>(buf.begin(), buf.begin() + 4) == from_hex("deadbeef"));
  CHECK(decode_ieth(buf) == ieth);
}

TEST_CASE("headers: ImmDt keeps the verbs __be32 bytes as they are", "[wire][headers]") {
  // What htonl(0x11223344) stores in ibv_send_wr::imm_data on a little-endian host.
  const std::uint8_t be_bytes[4] = {0x11, 0x22, 0x33, 0x44};
  ImmDt imm;
  std::memcpy(&imm.be_value, be_bytes, 4);
  std::array<std::uint8_t, 4> buf{};
  REQUIRE(encode_immdt(imm, buf) == kImmDtSize);
  CHECK(std::vector<std::uint8_t>(buf.begin(), buf.end()) == from_hex("11223344"));
  const auto back = decode_immdt(buf);
  REQUIRE(back);
  CHECK(back->be_value == imm.be_value);  // goes straight into ibv_wc::imm_data
  CHECK(__builtin_bswap32(back->be_value) == 0x11223344u);
}

TEST_CASE("headers: AETH syndromes for ACK, RNR NAK and every NAK code", "[wire][headers]") {
  std::array<std::uint8_t, 4> buf{};
  const Aeth ack = make_ack(0x123456);
  REQUIRE(encode_aeth(ack, buf) == kAethSize);
  CHECK(std::vector<std::uint8_t>(buf.begin(), buf.end()) == from_hex("1f123456"));
  CHECK(decode_aeth(buf) == ack);
  CHECK(aeth_type(ack.syndrome) == AethType::Ack);
  CHECK(aeth_value(ack.syndrome) == kCreditsInvalid);

  const Aeth rnr = make_rnr_nak(5, 14);
  CHECK(rnr.syndrome == 0x2E);
  CHECK(aeth_type(rnr.syndrome) == AethType::RnrNak);
  CHECK(aeth_value(rnr.syndrome) == 14);

  const std::pair<NakCode, std::uint8_t> naks[] = {
      {NakCode::PsnSequenceError, 0x60},  {NakCode::InvalidRequest, 0x61},
      {NakCode::RemoteAccessError, 0x62}, {NakCode::RemoteOperationalError, 0x63},
      {NakCode::InvalidRdRequest, 0x64},
  };
  for (const auto& [code, syndrome] : naks) {
    const Aeth nak = make_nak(1, code);
    CHECK(nak.syndrome == syndrome);
    CHECK(aeth_type(nak.syndrome) == AethType::Nak);
    CHECK(aeth_value(nak.syndrome) == static_cast<std::uint8_t>(code));
    CHECK(aeth_syndrome_valid(nak.syndrome));
  }
  CHECK(aeth_syndrome_valid(0x00));
  CHECK(aeth_syndrome_valid(0x3F));
  CHECK_FALSE(aeth_syndrome_valid(0x40));      // reserved type
  CHECK_FALSE(aeth_syndrome_valid(0x65));      // NAK code 5 is reserved
  CHECK_FALSE(aeth_syndrome_valid(0x9F));      // bit 7 set
  CHECK(make_ack(0x1234567).msn == 0x234567);  // MSN is 24 bits
}

TEST_CASE("headers: encode and decode refuse buffers one byte short", "[wire][headers]") {
  std::array<std::uint8_t, 28> buf{};
  CHECK(encode_bth({}, std::span(buf).first(11)) == 0);
  CHECK(encode_reth({}, std::span(buf).first(15)) == 0);
  CHECK(encode_immdt({}, std::span(buf).first(3)) == 0);
  CHECK(encode_aeth({}, std::span(buf).first(3)) == 0);
  CHECK(encode_atomic_eth({}, std::span(buf).first(27)) == 0);
  CHECK(encode_atomic_ack_eth({}, std::span(buf).first(7)) == 0);
  CHECK(encode_ieth({}, std::span(buf).first(3)) == 0);
  const std::span<const std::uint8_t> in(buf);
  CHECK_FALSE(decode_bth(in.first(11)));
  CHECK_FALSE(decode_reth(in.first(15)));
  CHECK_FALSE(decode_immdt(in.first(3)));
  CHECK_FALSE(decode_aeth(in.first(3)));
  CHECK_FALSE(decode_atomic_eth(in.first(27)));
  CHECK_FALSE(decode_atomic_ack_eth(in.first(7)));
  CHECK_FALSE(decode_ieth(in.first(3)));
  CHECK(decode_bth(in.first(12)));
}
