// IcrcHeaderCache (icrc.h): the header state it returns equals icrc_begin's for every flow and
// length, on hits, after any field of the flow changes, and when two flows share a slot; the pairs
// of a ping-pong between two connections all stay cached; packets built and parsed through it are
// the bytes and verdicts of the uncached path.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "wire/icrc.h"
#include "wire/packet.h"

using namespace vroce::wire;

namespace {

FlowAddress flow_v6(std::uint8_t src_last, std::uint8_t dst_last, std::uint16_t src_port) {
  FlowAddress f;
  f.family = IpFamily::V6;
  f.src_ip = {0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, src_last};
  f.dst_ip = {0xfd, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, dst_last};
  f.src_port = src_port;
  return f;
}

// Every variation of `base` in one field, and the base again.
std::vector<FlowAddress> variations(const FlowAddress& base) {
  std::vector<FlowAddress> out{base};
  FlowAddress f = base;
  f.src_ip[3] ^= 1;
  out.push_back(f);
  f = base;
  f.src_ip[0] ^= 0x40;  // a byte the slot index does not look at
  out.push_back(f);
  f = base;
  f.dst_ip[3] ^= 1;
  out.push_back(f);
  f = base;
  f.dst_ip[15] ^= 1;  // beyond the IPv4 bytes: only an IPv6 flow covers it
  out.push_back(f);
  f = base;
  f.src_port = static_cast<std::uint16_t>(f.src_port + 1);
  out.push_back(f);
  f = base;
  f.dst_port = static_cast<std::uint16_t>(f.dst_port ^ 0x100);
  out.push_back(f);
  f = base;
  f.family = base.family == IpFamily::V4 ? IpFamily::V6 : IpFamily::V4;
  out.push_back(f);
  out.push_back(base);
  return out;
}

}  // namespace

TEST_CASE("icrc header cache: equals icrc_begin on hits, misses and changed flows",
          "[wire][icrc]") {
  IcrcHeaderCache cache;
  const std::vector<std::size_t> lengths = {16, 20, 24, 44, 1024 + 16, 4096 + 28, 65507};
  for (const FlowAddress& base : {flow_v4(0x7F00000B, 0x7F00000C, 0xC001), flow_v6(1, 2, 0xC002)}) {
    for (const FlowAddress& flow : variations(base)) {
      for (int round = 0; round < 2; ++round) {  // the second round finds every pair cached
        for (std::size_t length : lengths) {
          INFO("family " << static_cast<int>(flow.family) << " port " << flow.src_port << " length "
                         << length << " round " << round);
          CHECK(cache.begin(flow, length) == icrc_begin(flow, length));
        }
      }
    }
  }
}

TEST_CASE("icrc header cache: flows that share a slot replace each other correctly",
          "[wire][icrc]") {
  IcrcHeaderCache cache;
  // The same length and src_port in flows whose slot-index inputs are equal: only the rest of the
  // flow tells them apart.
  FlowAddress a = flow_v4(0x0A000001, 0x0A000002, 0xC000);
  FlowAddress b = a;
  b.dst_ip[3] = 9;
  FlowAddress c = a;
  c.src_ip[0] = 11;
  std::mt19937 rng(7);
  const FlowAddress* flows[] = {&a, &b, &c};
  for (int i = 0; i < 300; ++i) {
    const FlowAddress& f = *flows[rng() % 3];
    const std::size_t length = 20 + 4 * (rng() % 40);
    REQUIRE(cache.begin(f, length) == icrc_begin(f, length));
  }
}

TEST_CASE("icrc header cache: a ping-pong's pairs, sent and received, all stay cached",
          "[wire][icrc]") {
  // What one engine builds and parses in a plugin ping-pong (the plugin's send and receive
  // connections, each QP with its own source port): data WRITE WITH IMMEDIATE (44 bytes with 8
  // of payload), clear-to-send WRITE (56) and ACKs (20), out and in. Indexed as before the sets
  // (length ^ source port ^ source address), the first two shared a slot and missed on every
  // packet.
  const std::uint32_t here = 0x7F0005F0;
  const std::uint32_t there = 0x7F0005F1;
  const FlowAddress out_send = flow_v4(here, there, 0xC0A3);
  const FlowAddress out_recv = flow_v4(here, there, 0xD117);
  const FlowAddress in_send = flow_v4(there, here, 0xC5F2);
  const FlowAddress in_recv = flow_v4(there, here, 0xE009);
  const std::vector<std::pair<const FlowAddress*, std::size_t>> pairs = {
      {&out_send, 44}, {&out_recv, 56}, {&out_recv, 20}, {&out_send, 20},
      {&in_recv, 44},  {&in_send, 56},  {&in_send, 20},  {&in_recv, 20}};
  IcrcHeaderCache cache;
  for (int round = 0; round < 50; ++round) {
    for (const auto& [flow, length] : pairs) {
      REQUIRE(cache.begin(*flow, length) == icrc_begin(*flow, length));
    }
  }
  CHECK(cache.misses() == pairs.size());

  // Any kWays pairs stay, wherever they land (one set at worst holds them all): here kWays
  // lengths of one flow, in turn.
  IcrcHeaderCache small;
  for (int round = 0; round < 10; ++round) {
    for (std::size_t k = 0; k < IcrcHeaderCache::kWays; ++k) {
      small.begin(out_send, 20 + 4 * k);
    }
  }
  CHECK(small.misses() == IcrcHeaderCache::kWays);
}

TEST_CASE("icrc header cache: build and parse through it match the uncached path", "[wire][icrc]") {
  IcrcHeaderCache build_cache;
  IcrcHeaderCache parse_cache;
  std::mt19937 rng(11);
  const FlowAddress flows[] = {flow_v4(0x7F00000B, 0x7F00000C, 0xC001),
                               flow_v4(0x7F00000B, 0x7F00000C, 0xC003),
                               flow_v4(0x7F00000D, 0x7F00000C, 0xC001), flow_v6(5, 6, 0xC001)};
  const std::uint8_t opcodes[] = {static_cast<std::uint8_t>(Opcode::SendOnly),
                                  static_cast<std::uint8_t>(Opcode::WriteOnlyImm),
                                  static_cast<std::uint8_t>(Opcode::Acknowledge)};
  std::vector<std::uint8_t> data(64);
  for (int i = 0; i < 400; ++i) {
    const FlowAddress& flow = flows[rng() % 4];
    PacketHeaders h;
    h.bth.opcode = opcodes[rng() % 3];
    h.bth.dest_qp = static_cast<std::uint32_t>(rng()) & kQpnMask;
    h.bth.psn = static_cast<std::uint32_t>(rng()) & kQpnMask;
    h.bth.fecn = (rng() & 1) != 0;  // byte 4, which the build masks in place and restores
    h.bth.becn = (rng() & 1) != 0;
    h.reth.dma_length = 0;
    for (auto& byte : data) {
      byte = static_cast<std::uint8_t>(rng());
    }
    const bool payload = h.bth.opcode != static_cast<std::uint8_t>(Opcode::Acknowledge);
    const std::size_t n = payload ? rng() % 9 : 0;  // 0..8 bytes: small packets, every pad
    if (h.bth.opcode == static_cast<std::uint8_t>(Opcode::WriteOnlyImm)) {
      h.reth.dma_length = static_cast<std::uint32_t>(n);
    }
    std::uint8_t plain[kMaxPacketSize];
    std::uint8_t cached[kMaxPacketSize];
    const ByteSpan piece(data.data(), n);
    const auto a = build_packet(h, piece, flow, plain);
    const auto b = build_packet(h, piece, flow, cached, &build_cache);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a.size == b.size);
    REQUIRE(std::vector<std::uint8_t>(plain, plain + a.size) ==
            std::vector<std::uint8_t>(cached, cached + b.size));
    const ByteSpan packet(cached, b.size);
    REQUIRE(icrc_valid(flow, packet));
    ParseOptions options;
    options.flow = flow;
    options.icrc_cache = &parse_cache;
    const auto parsed = parse_packet(packet, options);
    REQUIRE(parsed.ok());
    CHECK(parsed.view.headers.bth.fecn == h.bth.fecn);
    CHECK(parsed.view.headers.bth.becn == h.bth.becn);
    // The same bytes on another flow fail the check, cached or not.
    const FlowAddress& other = flows[(&flow - flows + 1) % 4];
    options.flow = other;
    CHECK(parse_packet(packet, options).error == ParseError::BadIcrc);
  }
}
