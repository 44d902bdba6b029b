// ICRC known-answer vectors: one captured from real hardware, one from scapy's test suite, and
// packets constructed here whose ICRC was computed independently with Python's zlib.crc32.
#include "wire/icrc.h"

#include <catch2/catch.hpp>

#include "test_util.h"
#include "wire/byte_order.h"
#include "wire/ip_udp.h"
#include "wire/packet.h"

using namespace vroce::wire;
using vroce::wire::test::from_hex;
using vroce::wire::test::kConnectX4LxCnpFrame;

namespace {

// scapy's constructed UC SEND ONLY example from the same file (computed by scapy, not a NIC,
// listed as a second independent implementation): IPv4 ID 1144, TOS 1, TTL 64, MigReq, PadCnt 2.
constexpr std::string_view kScapyUcSendOnly =
    "248a07a8fa22 248a07a8fa22 0800"
    "4501 0040 0478 4000 4011 b4d5 c0a80007 c0a80007"
    "c000 12b7 002c aca2"
    "2460ffff 000000d3 00cf1710"
    "4630818be28935d90e9a955054 01be885e50 0000"
    "78f353f3";

IpUdpView ip_udp_of_ethernet_frame(const std::vector<std::uint8_t>& frame) {
  const auto r = parse_ip_udp(std::span(frame).subspan(14));
  REQUIRE(r.error == IpUdpError::Ok);
  return r.view;
}

}  // namespace

TEST_CASE("icrc: ConnectX-4 Lx captured CNP verifies bit-exact", "[wire][icrc]") {
  const auto frame = from_hex(kConnectX4LxCnpFrame);
  REQUIRE(frame.size() == 74);
  const IpUdpView v = ip_udp_of_ethernet_frame(frame);
  CHECK(v.traffic_class == 0xc2);
  CHECK(v.hop_limit == 64);
  CHECK(v.flow.dst_port == kRoceUdpPort);
  REQUIRE(v.udp_payload.size() == 32);
  CHECK(icrc_stored(v.udp_payload) == 0x2a00fd82u);
  const auto computed = icrc_compute_captured(v);
  REQUIRE(computed);
  CHECK(*computed == 0x2a00fd82u);

  // The parser understands it as a CNP (ICRC already checked over the real headers).
  ParseOptions opts;
  opts.icrc = IcrcPolicy::Skip;
  const auto parsed = parse_packet(v.udp_payload, opts);
  REQUIRE(parsed.ok());
  CHECK(parsed.view.opcode() == Opcode::Cnp);
  CHECK(parsed.view.headers.bth.becn);
  CHECK(parsed.view.headers.bth.dest_qp == 0x118);

  // Our CNP builder reproduces the UDP payload byte for byte except the ICRC, which differs
  // only because the NIC's IPv4 ID (0x718c) is not the socket path's 0.
  std::array<std::uint8_t, 64> out{};
  const auto built = build_packet(make_cnp_headers(0x118), ByteSpan{}, v.flow, out);
  REQUIRE(built.ok());
  REQUIRE(built.size == 32);
  CHECK(std::equal(out.begin(), out.begin() + 28, v.udp_payload.begin()));
}

TEST_CASE("icrc: the masked fields do not change the ICRC, the covered ones do", "[wire][icrc]") {
  auto frame = from_hex(kConnectX4LxCnpFrame);
  auto icrc_of = [](const std::vector<std::uint8_t>& f) {
    return *icrc_compute_captured(ip_udp_of_ethernet_frame(f));
  };
  const std::uint32_t want = 0x2a00fd82u;
  for (std::size_t masked : std::initializer_list<std::size_t>{14 + 1, 14 + 8, 14 + 10, 14 + 11,
                                                               34 + 6, 34 + 7, 42 + 4}) {
    auto f = frame;
    f[masked] ^= 0x5A;
    CHECK(icrc_of(f) == want);
  }
  // IP ID, flags, addresses, ports, BTH bytes other than 4, the reserved CNP bytes.
  // (Flag bit 0x80 of byte 6 is the reserved IPv4 flag: covered, and not a fragment.)
  const std::pair<std::size_t, std::uint8_t> covered[] = {
      {14 + 4, 1}, {14 + 5, 1},  {14 + 6, 0x80}, {14 + 12, 1}, {14 + 19, 1},
      {34 + 0, 1}, {34 + 3, 1},  {42 + 0, 1},    {42 + 3, 1},  {42 + 5, 1},
      {42 + 8, 1}, {42 + 11, 1}, {42 + 12, 1},   {42 + 27, 1}};
  for (const auto& [offset, flip] : covered) {
    auto f = frame;
    f[offset] = static_cast<std::uint8_t>(f[offset] ^ flip);
    CHECK(icrc_of(f) != want);
  }
}

TEST_CASE("icrc: scapy's UC example verifies", "[wire][icrc]") {
  const auto frame = from_hex(kScapyUcSendOnly);
  const IpUdpView v = ip_udp_of_ethernet_frame(frame);
  CHECK(icrc_stored(v.udp_payload) == 0xf353f378u);
  CHECK(icrc_compute_captured(v) == std::optional<std::uint32_t>(0xf353f378u));
}

// Packets built with the socket-path pseudo-header (IPv4 ID 0, DF). The expected bytes,
// ICRC included, were produced once with Python: zlib.crc32 over b"\xff"*8 + the IPv4 header
// struct.pack("!BBHHHBBH4s4s", 0x45, 0xff, 20+8+n, 0, 0x4000, 0xff, 17, 0xffff, src, dst)
// (IPv6: struct.pack("!IHBB16s16s", 0x6fffffff, 8+n, 17, 0xff, src, dst)) + the UDP header
// struct.pack("!HHHH", sport, 4791, 8+n, 0xffff) + the payload with byte 4 set to 0xff, where n is
// the UDP payload length including the ICRC; stored with struct.pack("<I", crc).
TEST_CASE("icrc: constructed socket-path vectors match an independent computation",
          "[wire][icrc]") {
  SECTION("RDMA WRITE ONLY WITH IMMEDIATE over IPv4, 5 bytes of payload, PSN near wrap") {
    PacketHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(Opcode::WriteOnlyImm);
    h.bth.solicited = true;
    h.bth.dest_qp = 0x123;
    h.bth.ack_req = true;
    h.bth.psn = 0xFFFFFE;
    h.reth = {0x00007f0012345678ull, 0xCAFE0001u, 5};
    const std::uint8_t imm_wire[4] = {0x0a, 0x0b, 0x0c, 0x0d};
    h.imm.be_value = load_le32(imm_wire);
    const std::string_view payload = "vroce";
    std::array<std::uint8_t, 128> out{};
    const auto r =
        build_packet(h, ByteSpan(reinterpret_cast<const std::uint8_t*>(payload.data()), 5),
                     flow_v4(0x7F00000B, 0x7F00000C, 0xC001), out);
    REQUIRE(r.ok());
    const auto want = from_hex(
        "0bb0ffff0000012380fffffe00007f0012345678cafe0001000000050a0b0c0d76726f636500000040730496");
    CHECK(std::vector<std::uint8_t>(out.begin(), out.begin() + static_cast<long>(r.size)) == want);
  }
  SECTION("ACKNOWLEDGE over IPv4") {
    PacketHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(Opcode::Acknowledge);
    h.bth.dest_qp = 0x456;
    h.bth.psn = 0xFFFFFE;
    h.aeth = make_ack(7);
    std::array<std::uint8_t, 64> out{};
    const auto r = build_packet(h, ByteSpan{}, flow_v4(0x7F00000C, 0x7F00000B, 0xC002), out);
    REQUIRE(r.ok());
    const auto want = from_hex("1100ffff0000045600fffffe1f00000797ed5380");
    CHECK(std::vector<std::uint8_t>(out.begin(), out.begin() + static_cast<long>(r.size)) == want);
  }
  SECTION("NAK remote access error over IPv4") {
    PacketHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(Opcode::Acknowledge);
    h.bth.dest_qp = 0x456;
    h.bth.psn = 0x100;
    h.aeth = make_nak(9, NakCode::RemoteAccessError);
    std::array<std::uint8_t, 64> out{};
    const auto r = build_packet(h, ByteSpan{}, flow_v4(0x7F00000C, 0x7F00000B, 0xC002), out);
    REQUIRE(r.ok());
    const auto want = from_hex("1100ffff000004560000010062000009b46414b4");
    CHECK(std::vector<std::uint8_t>(out.begin(), out.begin() + static_cast<long>(r.size)) == want);
  }
  SECTION("SEND ONLY over IPv6 with FECN and BECN set (byte 4 is masked)") {
    const auto want = from_hex("0430ffffc000abcd8000001068656c6c6f2c2076726f63652100000080989f11");
    CHECK(icrc_valid(test::test_flow_v6(), want));
    PacketHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(Opcode::SendOnly);
    h.bth.fecn = true;
    h.bth.becn = true;
    h.bth.dest_qp = 0xABCD;
    h.bth.ack_req = true;
    h.bth.psn = 0x10;
    const std::string_view payload = "hello, vroce!";
    std::array<std::uint8_t, 128> out{};
    const auto r = build_packet(
        h, ByteSpan(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size()),
        test::test_flow_v6(), out);
    REQUIRE(r.ok());
    CHECK(std::vector<std::uint8_t>(out.begin(), out.begin() + static_cast<long>(r.size)) == want);
  }
}

TEST_CASE("icrc: socket path and captured path agree on a reconstructed IPv4 header",
          "[wire][icrc]") {
  // The headers vroce's socket path assumes (ID 0, DF) built out as a real IPv4 + UDP packet.
  const auto udp_payload = from_hex("1100ffff0000045600fffffe1f00000797ed5380");
  std::vector<std::uint8_t> ip = from_hex("4500 0030 0000 4000 4011 0000 7f00000c 7f00000b");
  ip[1] = 0x68;  // DSCP 26, ECN 0: masked
  ip[8] = 7;     // TTL: masked
  const auto udp = from_hex("c002 12b7 001c 1234");
  ip.insert(ip.end(), udp.begin(), udp.end());
  ip.insert(ip.end(), udp_payload.begin(), udp_payload.end());
  const auto r = parse_ip_udp(ip);
  REQUIRE(r.error == IpUdpError::Ok);
  CHECK(r.view.traffic_class == 0x68);
  CHECK(icrc_compute_captured(r.view) ==
        icrc_compute(flow_v4(0x7F00000C, 0x7F00000B, 0xC002), udp_payload));
  CHECK(icrc_compute_captured(r.view) == std::optional<std::uint32_t>(0x8053ed97u));
}

TEST_CASE("icrc: a too-short payload has no ICRC", "[wire][icrc]") {
  const std::vector<std::uint8_t> tiny(15, 0);
  CHECK_FALSE(icrc_compute(test::test_flow_v4(), tiny));
  CHECK_FALSE(icrc_valid(test::test_flow_v4(), tiny));
}
