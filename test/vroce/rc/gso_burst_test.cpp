// How vroce's transmit batch becomes UDP GSO sends (packet_io/gso_burst.h), without a socket: which
// runs burst (one route, one length but the last, at most 8, never a CNP; the PSNs do not
// matter), and that segment j's ICRC is the one over an IPv4 header carrying ID j, as the kernel
// sends it.
#include "packet_io/gso_burst.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "wire/byte_order.h"
#include "wire/icrc.h"
#include "wire/ip_udp.h"
#include "wire/packet.h"

using namespace vroce;
using packet_io::GsoBursts;
using packet_io::OutDatagram;
using packet_io::TxPacket;

namespace {

struct Route {
  sockaddr_storage dst{};
  socklen_t dst_len = 0;
  wire::FlowAddress flow;  // this side -> dst, for the ICRC
};

Route route_v4(uint32_t dst_ip) {
  Route r;
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(wire::kRoceUdpPort);
  in.sin_addr.s_addr = htonl(dst_ip);
  std::memcpy(&r.dst, &in, sizeof(in));
  r.dst_len = sizeof(in);
  r.flow = wire::flow_v4(0x7F00000B, dst_ip, wire::kRoceUdpPort);
  return r;
}

Route route_v6() {
  Route r;
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(wire::kRoceUdpPort);
  in6.sin6_addr.s6_addr[0] = 0xfd;
  in6.sin6_addr.s6_addr[15] = 2;
  std::memcpy(&r.dst, &in6, sizeof(in6));
  r.dst_len = sizeof(in6);
  r.flow.family = wire::IpFamily::V6;
  r.flow.src_ip[0] = 0xfd;
  r.flow.src_ip[15] = 1;
  r.flow.dst_ip[0] = 0xfd;
  r.flow.dst_ip[15] = 2;
  r.flow.src_port = wire::kRoceUdpPort;
  return r;
}

// A transmit batch: built packets (socket-path ICRCs, ID 0) and their TxPackets.
struct Batch {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<packet_io::TxPacket> packets;

  void add(const Route& route, wire::Opcode opcode, uint32_t psn, size_t payload,
           uint32_t dest_qp = 0x42, uint8_t traffic_class = 106, uint8_t hop_limit = 64) {
    wire::PacketHeaders h;
    if (opcode == wire::Opcode::Cnp) {
      h = wire::make_cnp_headers(dest_qp);
    } else {
      h.bth.opcode = static_cast<uint8_t>(opcode);
      h.bth.dest_qp = dest_qp;
      h.bth.psn = psn;
      h.aeth = wire::make_ack(1);
    }
    std::vector<uint8_t> data(payload, static_cast<uint8_t>(psn));
    std::vector<uint8_t> out(wire::kMaxPacketSize);
    const auto built = wire::build_packet(h, wire::ByteSpan(data), route.flow, out);
    REQUIRE(built.ok());
    out.resize(built.size);
    bytes.push_back(std::move(out));
    packets.push_back(
        packet_io::TxPacket{nullptr, 0, &route.dst, route.dst_len, traffic_class, hop_limit});
  }

  // Forms the messages; the TxPackets point into `bytes`, which no longer grows.
  std::vector<packet_io::OutDatagram> form(packet_io::GsoBursts& bursts, bool on = true) {
    for (size_t i = 0; i < packets.size(); ++i) {
      packets[i].data = bytes[i].data();
      packets[i].length = bytes[i].size();
    }
    std::vector<packet_io::OutDatagram> out(packets.size());
    out.resize(bursts.form(packets, on, out.data()));
    return out;
  }
};

// The datagrams a message carries, as (pointer, length).
std::vector<std::pair<const uint8_t*, size_t>> datagrams_of(const packet_io::OutDatagram& d) {
  std::vector<std::pair<const uint8_t*, size_t>> out;
  if (d.segment_count >= 2) {
    for (size_t j = 0; j < d.segment_count; ++j) {
      out.emplace_back(static_cast<const uint8_t*>(d.segments[j].iov_base), d.segments[j].iov_len);
    }
  } else {
    out.emplace_back(d.data, d.length);
  }
  return out;
}

std::vector<size_t> shape(const std::vector<packet_io::OutDatagram>& messages) {
  std::vector<size_t> sizes;
  for (const packet_io::OutDatagram& d : messages) {
    sizes.push_back(d.segment_count >= 2 ? d.segment_count : 1);
  }
  return sizes;
}

// The ICRC a receiver computes over a real IPv4 + UDP header with this ID.
uint32_t icrc_over_header(const wire::FlowAddress& flow, const uint8_t* udp_payload, size_t length,
                          uint16_t id) {
  std::vector<uint8_t> ip(28 + length, 0);
  ip[0] = 0x45;
  wire::store_be16(&ip[2], static_cast<uint16_t>(ip.size()));
  wire::store_be16(&ip[4], id);
  wire::store_be16(&ip[6], 0x4000);  // DF
  ip[8] = 64;
  ip[9] = 17;
  std::memcpy(&ip[12], flow.src_ip.data(), 4);
  std::memcpy(&ip[16], flow.dst_ip.data(), 4);
  wire::store_be16(&ip[20], flow.src_port);
  wire::store_be16(&ip[22], flow.dst_port);
  wire::store_be16(&ip[24], static_cast<uint16_t>(8 + length));
  std::memcpy(&ip[28], udp_payload, length);
  const auto parsed = wire::parse_ip_udp(ip);
  REQUIRE(parsed.error == wire::IpUdpError::Ok);
  return *wire::icrc_compute_captured(parsed.view);
}

}  // namespace

TEST_CASE("a run bursts by 8 wherever it starts, segment j sealed for IPv4 ID j", "[gso]") {
  const Route to = route_v4(0x7F00000C);
  Batch b;
  for (uint32_t psn = 0xFFFFF5; psn != 0x00000A; psn = (psn + 1) & 0xFFFFFF) {
    b.add(to, wire::Opcode::WriteMiddle, psn, 1024);  // across the 2^24 wrap, from PSN % 8 = 5
  }
  const auto unpatched = b.bytes;
  packet_io::GsoBursts bursts;
  const auto out = b.form(bursts);
  REQUIRE(shape(out) == std::vector<size_t>{8, 8, 5});
  size_t index = 0;
  for (const packet_io::OutDatagram& d : out) {
    CHECK(d.segment_size == 12 + 1024 + 4);
    CHECK(d.dst == &to.dst);
    CHECK(d.traffic_class == 106);
    for (size_t j = 0; j < d.segment_count; ++j, ++index) {
      const auto& seg = d.segments[j];
      const auto* p = static_cast<const uint8_t*>(seg.iov_base);
      CAPTURE(wire::bth_psn(p), j);
      // Segment 0 leaves with ID 0, as a datagram alone: its ICRC as built.
      CHECK((b.bytes[index] == unpatched[index]) == (j == 0));
      // Exact on the wire: the ICRC over the header the kernel gives segment j (ID j).
      CHECK(wire::icrc_stored(wire::ByteSpan(p, seg.iov_len)) ==
            icrc_over_header(to.flow, p, seg.iov_len, static_cast<uint16_t>(j)));
      // And the receiver, which sees no header, accepts it.
      wire::ParseOptions options;
      options.flow = to.flow;
      CHECK(wire::parse_packet(wire::ByteSpan(p, seg.iov_len), options).ok());
    }
  }
}

TEST_CASE("a message leaves in the same bursts from any initial PSN", "[gso]") {
  // 64 KiB as 16 packets of 4096 bytes. The FIRST (with a RETH) is longer than a MIDDLE, so it
  // takes one MIDDLE along as its shorter last segment; then 8 and 5 MIDDLEs; the LAST (with the
  // immediate) is longer again and leaves alone. Four sends from every PSN: while bursts had to
  // start at a multiple of 8, this took 4 to 9 depending on the QP's initial PSN.
  const Route to = route_v4(0x7F00000C);
  packet_io::GsoBursts bursts;
  for (uint32_t first = 0x000100; first < 0x000108; ++first) {
    CAPTURE(first);
    Batch b;
    b.add(to, wire::Opcode::WriteFirst, first, 4096);
    for (uint32_t k = 1; k < 15; ++k) {
      b.add(to, wire::Opcode::WriteMiddle, first + k, 4096);
    }
    b.add(to, wire::Opcode::WriteLastImm, first + 15, 4096);
    CHECK(shape(b.form(bursts)) == std::vector<size_t>{2, 8, 5, 1});
  }
}

TEST_CASE("only the last packet of a burst may be shorter", "[gso]") {
  const Route to = route_v4(0x7F00000C);
  Batch b;
  b.add(to, wire::Opcode::WriteFirst, 15, 1024);   // 16 bytes of RETH longer than a MIDDLE
  b.add(to, wire::Opcode::WriteMiddle, 16, 1024);  // shorter: the FIRST's burst ends with it
  b.add(to, wire::Opcode::WriteMiddle, 17, 1024);
  b.add(to, wire::Opcode::WriteLast, 18, 100);  // shorter: ends the burst
  b.add(to, wire::Opcode::WriteFirst, 19, 1024);
  packet_io::GsoBursts bursts;
  auto out = b.form(bursts);
  CHECK(shape(out) == std::vector<size_t>{2, 2, 1});
  CHECK(out[0].segment_size == 12 + 16 + 1024 + 4);
  CHECK(datagrams_of(out[0])[1].second == 12 + 1024 + 4);
  CHECK(out[1].segment_size == 12 + 1024 + 4);
  CHECK(datagrams_of(out[1])[1].second == 12 + 100 + 4);

  Batch longer;  // a longer packet after the first does not join
  longer.add(to, wire::Opcode::WriteMiddle, 24, 256);
  longer.add(to, wire::Opcode::WriteMiddle, 25, 1024);
  out = longer.form(bursts);
  CHECK(shape(out) == std::vector<size_t>{1, 1});
}

TEST_CASE("another route or a CNP ends a burst; another QP, direction or PSN does not", "[gso]") {
  const Route to = route_v4(0x7F00000C);
  const Route other = route_v4(0x7F00000D);
  packet_io::GsoBursts bursts;
  struct Case {
    const char* what;
    std::vector<size_t> shape;
    void (*second)(Batch&, const Route&, const Route&);
  };
  const Case cases[] = {
      {"same everything",
       {2},
       [](Batch& b, const Route& t, const Route&) { b.add(t, wire::Opcode::WriteMiddle, 9, 512); }},
      {"another destination",
       {1, 1},
       [](Batch& b, const Route&, const Route& o) { b.add(o, wire::Opcode::WriteMiddle, 9, 512); }},
      {"another traffic class",
       {1, 1},
       [](Batch& b, const Route& t, const Route&) {
         b.add(t, wire::Opcode::WriteMiddle, 9, 512, 0x42, 0);
       }},
      {"another hop limit",
       {1, 1},
       [](Batch& b, const Route& t, const Route&) {
         b.add(t, wire::Opcode::WriteMiddle, 9, 512, 0x42, 106, 3);
       }},
      {"a CNP",
       {1, 1},
       [](Batch& b, const Route& t, const Route&) { b.add(t, wire::Opcode::Cnp, 0, 0); }},
      // The ID is the segment's place in the burst, so packets of other QPs may share one.
      {"another QP",
       {2},
       [](Batch& b, const Route& t, const Route&) {
         b.add(t, wire::Opcode::WriteMiddle, 9, 512, 0x43);
       }},
      {"a response after a request",
       {2},
       [](Batch& b, const Route& t, const Route&) {
         b.add(t, wire::Opcode::ReadResponseMiddle, 9, 512);
       }},
      {"a PSN gap",
       {2},
       [](Batch& b, const Route& t, const Route&) {
         b.add(t, wire::Opcode::WriteMiddle, 10, 512);
       }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Batch b;
    b.add(to, wire::Opcode::WriteMiddle, 8, 512);
    c.second(b, to, other);
    CHECK(shape(b.form(bursts)) == c.shape);
  }
  Batch cnps;  // CNPs (PSN 0) never burst, whatever follows
  cnps.add(to, wire::Opcode::Cnp, 0, 0);
  cnps.add(to, wire::Opcode::Cnp, 0, 0);
  CHECK(shape(cnps.form(bursts)) == std::vector<size_t>{1, 1});
}

TEST_CASE("IPv6 has no ID: any run of equal lengths bursts, its ICRCs untouched", "[gso]") {
  const Route to = route_v6();
  Batch b;
  for (uint32_t psn = 5; psn < 15; ++psn) {
    b.add(to, wire::Opcode::WriteMiddle, psn, 1024, psn < 10 ? 0x42 : 0x43);
  }
  const auto unpatched = b.bytes;
  packet_io::GsoBursts bursts;
  CHECK(shape(b.form(bursts)) == std::vector<size_t>{8, 2});
  CHECK(b.bytes == unpatched);
}

TEST_CASE("with bursts off every packet is one datagram, unchanged", "[gso]") {
  const Route to = route_v4(0x7F00000C);
  Batch b;
  for (uint32_t psn = 0; psn < 16; ++psn) {
    b.add(to, wire::Opcode::WriteMiddle, psn, 1024);
  }
  const auto unpatched = b.bytes;
  packet_io::GsoBursts bursts;
  const auto out = b.form(bursts, false);
  CHECK(out.size() == 16);
  CHECK(shape(out) == std::vector<size_t>(16, 1));
  CHECK(b.bytes == unpatched);
}
