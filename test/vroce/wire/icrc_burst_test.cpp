// The IPv4 ID of UDP GSO bursts (wire/icrc.h): the ID delta against a full ICRC computed over an
// IPv4 header that carries the ID, for several lengths and IDs, and the receiver's candidates
// (IDs 0..7, a segment's place in its burst, whatever its PSN) in parse_packet.
#include <catch2/catch.hpp>

#include "pcap_writer.h"
#include "test_util.h"
#include "wire/byte_order.h"
#include "wire/icrc.h"
#include "wire/ip_udp.h"
#include "wire/packet.h"

using namespace vroce::wire;
using vroce::wire::test::random_bytes;

namespace {

// The ICRC of `udp_payload` over a real IPv4 + UDP header whose ID field is `id`.
std::uint32_t icrc_with_id(const FlowAddress& flow, const std::vector<std::uint8_t>& udp_payload,
                           std::uint16_t id) {
  std::vector<std::uint8_t> ip = test::ip_udp_packet(flow, 0x68, 64, udp_payload);
  store_be16(ip.data() + 4, id);
  const auto parsed = parse_ip_udp(ip);
  REQUIRE(parsed.error == IpUdpError::Ok);
  const auto icrc = icrc_compute_captured(parsed.view);
  REQUIRE(icrc);
  return *icrc;
}

// An RDMA WRITE MIDDLE of `payload` bytes with this PSN, sealed for the socket path (ID 0).
std::vector<std::uint8_t> write_middle(const FlowAddress& flow, std::uint32_t psn,
                                       std::size_t payload) {
  PacketHeaders h;
  h.bth.opcode = static_cast<std::uint8_t>(Opcode::WriteMiddle);
  h.bth.dest_qp = 0x4242;
  h.bth.psn = psn;
  const auto data = random_bytes(payload, psn);
  std::vector<std::uint8_t> out(kMaxPacketSize);
  const auto built = build_packet(h, ByteSpan(data), flow, out);
  REQUIRE(built.ok());
  out.resize(built.size);
  return out;
}

// What the sender does to segment `id` of a burst: patch the stored ICRC by the ID delta.
void patch_for_id(std::vector<std::uint8_t>& pkt, std::uint16_t id) {
  std::uint8_t* icrc = pkt.data() + pkt.size() - kIcrcSize;
  store_le32(icrc, load_le32(icrc) ^ icrc_ipv4_id_delta(pkt.size(), id));
}

ParseOptions verify(const FlowAddress& flow) {
  ParseOptions o;
  o.flow = flow;
  return o;
}

}  // namespace

TEST_CASE("icrc: the ID delta gives the ICRC over a header carrying that IPv4 ID",
          "[wire][icrc][gso]") {
  const FlowAddress flow = test::test_flow_v4();
  // The smallest packet, an ACK, full-MTU WRITE MIDDLEs and FIRSTs (1024 and 4096), a READ
  // response with AETH, and lengths that share a slot of the delta cache (64 apart).
  for (const std::size_t len :
       {std::size_t{16}, std::size_t{20}, std::size_t{1052}, std::size_t{1068}, std::size_t{4112},
        std::size_t{4128}, std::size_t{4112 + 64}, std::size_t{333}, std::size_t{333 + 64}}) {
    CAPTURE(len);
    auto payload = random_bytes(len, len);
    test::reseal(payload, flow);
    const std::uint32_t id0 = *icrc_compute(flow, payload);
    CHECK(icrc_with_id(flow, payload, 0) == id0);
    CHECK(icrc_ipv4_id_delta(len, 0) == 0);
    for (const int id_value : {1, 2, 3, 4, 5, 6, 7, 0x100, 0x1234, 0xFFFF}) {
      const auto id = static_cast<std::uint16_t>(id_value);
      CAPTURE(id);
      const std::uint32_t delta = icrc_ipv4_id_delta(len, id);
      CHECK(delta != 0);
      CHECK((id0 ^ delta) == icrc_with_id(flow, payload, id));
      // Asked again (now from the cache, or after a colliding length evicted it): the same.
      CHECK(icrc_ipv4_id_delta(len, id) == delta);
    }
  }
}

TEST_CASE("parse: IPv4 accepts the ICRC for IDs 0 to 7 whatever the PSN, nothing else",
          "[wire][packet][gso]") {
  CHECK(kMaxBurstSegments == 8);
  const FlowAddress flow = test::test_flow_v4();
  // A burst may start at any PSN, so the ID says nothing about the PSN: every PSN of a block,
  // also across the 2^24 wrap, takes every ID below 8 and no other.
  for (const std::uint32_t first : {std::uint32_t{0x123450}, std::uint32_t{0xFFFFFB}}) {
    for (std::uint32_t j = 0; j < 8; ++j) {
      const std::uint32_t psn = (first + j) & 0xFFFFFF;
      CAPTURE(psn);
      for (const std::size_t payload : {std::size_t{0}, std::size_t{1024}, std::size_t{4096}}) {
        CAPTURE(payload);
        const auto plain = write_middle(flow, psn, payload);
        CHECK(parse_packet(plain, verify(flow)).ok());  // ID 0: a datagram sent alone
        for (const int id_value : {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 0x100, 0xFFFF}) {
          auto pkt = plain;
          const auto id = static_cast<std::uint16_t>(id_value);
          patch_for_id(pkt, id);
          const bool expected = id < kMaxBurstSegments;
          CAPTURE(id);
          CHECK(parse_packet(pkt, verify(flow)).ok() == expected);
          if (!expected) {
            CHECK(parse_packet(pkt, verify(flow)).error == ParseError::BadIcrc);
          }
        }
      }
    }
  }
}

TEST_CASE("parse: a corrupted burst segment is still a bad ICRC", "[wire][packet][gso]") {
  const FlowAddress flow = test::test_flow_v4();
  auto pkt = write_middle(flow, 0x000105, 256);
  patch_for_id(pkt, 5);
  REQUIRE(parse_packet(pkt, verify(flow)).ok());
  for (std::size_t i = 0; i < pkt.size(); ++i) {
    for (const int flip : {0x01, 0x04, 0x80}) {
      auto bad = pkt;
      bad[i] = static_cast<std::uint8_t>(bad[i] ^ flip);
      const auto r = parse_packet(bad, verify(flow));
      if (i == 4) {
        CHECK(r.ok());  // FECN/BECN/reserved: not covered
      } else if (r.error != ParseError::BadIcrc) {
        FAIL("flipping bit " << flip << " of byte " << i << " gave " << parse_error_name(r.error));
      }
    }
  }
}

TEST_CASE("parse: IPv6 has no ID, so only the socket path's ICRC is accepted",
          "[wire][packet][gso]") {
  const FlowAddress flow = test::test_flow_v6();
  auto pkt = write_middle(flow, 0x000103, 1024);
  REQUIRE(parse_packet(pkt, verify(flow)).ok());
  patch_for_id(pkt, 3);
  CHECK(parse_packet(pkt, verify(flow)).error == ParseError::BadIcrc);
}
