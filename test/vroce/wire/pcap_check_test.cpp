// tools/pcap-icrc-check run on captures generated here: every supported file format and link
// type, valid and corrupted packets, snap-length cuts, malformed files. The packets come from
// the wire builder (socket-path ICRC), so a pass also shows that the socket-path ICRC equals
// the ICRC over real headers with ID 0 and DF.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "pcap_writer.h"
#include "test_util.h"
#include "wire/byte_order.h"
#include "wire/icrc.h"
#include "wire/packet.h"

using namespace vroce::wire;
using namespace vroce::wire::test;

#ifndef VROCE_PCAP_ICRC_CHECK
#error "VROCE_PCAP_ICRC_CHECK must name the pcap-icrc-check executable"
#endif

namespace {

// A private directory for one test, removed even when the test fails.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vroce-wire-pcap-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct RunResult {
  int status = -1;
  std::string output;
};

RunResult run_checker(const std::string& args) {
  const std::string cmd = std::string("'") + VROCE_PCAP_ICRC_CHECK + "' " + args + " 2>&1";
  RunResult r;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
    r.output.append(buf, n);
  }
  const int raw = ::pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

std::vector<std::uint8_t> built(const PacketHeaders& h, std::size_t payload,
                                const FlowAddress& flow) {
  const auto data = random_bytes(payload, payload + 1);
  std::vector<std::uint8_t> out(kMaxPacketSize);
  const auto r = build_packet(h, data, flow, out);
  REQUIRE(r.ok());
  out.resize(r.size);
  return out;
}

PacketHeaders headers(Opcode op, std::uint32_t psn) {
  PacketHeaders h;
  h.bth.opcode = static_cast<std::uint8_t>(op);
  h.bth.dest_qp = 0x11;
  h.bth.psn = psn;
  h.aeth = make_ack(psn);
  h.reth.dma_length = 100;
  return h;
}

// A small conversation: a WRITE of 3 packets, a SEND WITH IMMEDIATE, a READ and its response,
// ACKs back, all with the given traffic class (106 = DSCP 26, ECN ECT(0)).
std::vector<std::vector<std::uint8_t>> conversation(const FlowAddress& flow, std::uint8_t tc) {
  // Responses go to port 4791 as well, from the responder's own source port.
  FlowAddress back = flow;
  std::swap(back.src_ip, back.dst_ip);
  back.src_port = 0xC0DE;
  std::vector<std::vector<std::uint8_t>> ip;
  auto add = [&](const FlowAddress& f, const PacketHeaders& h, std::size_t n) {
    ip.push_back(ip_udp_packet(f, tc, 64, built(h, n, f)));
  };
  PacketHeaders first = headers(Opcode::WriteFirst, 1);
  first.reth.dma_length = 2500;
  add(flow, first, 1024);
  add(flow, headers(Opcode::WriteMiddle, 2), 1024);
  add(flow, headers(Opcode::WriteLast, 3), 452);
  add(back, headers(Opcode::Acknowledge, 3), 0);
  add(flow, headers(Opcode::SendOnlyImm, 4), 13);
  add(back, headers(Opcode::Acknowledge, 4), 0);
  add(flow, headers(Opcode::ReadRequest, 5), 0);
  add(back, headers(Opcode::ReadResponseOnly, 5), 100);
  return ip;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("pcap-icrc-check: a valid Ethernet capture passes with counts, opcodes and DSCP",
          "[wire][pcap]") {
  TempDir dir;
  PcapWriter w({});
  for (const auto& p : conversation(test_flow_v4(), 106)) {
    w.add(p);
  }
  // Not RoCE: a UDP datagram to another port, and an ARP frame (non-IP).
  auto dns = ip_udp_packet(flow_v4(0x7F000001, 0x7F000002, 5000, 53), 0, 64, {1, 2, 3, 4});
  w.add(dns);
  std::vector<std::uint8_t> arp(12, 0);  // zero MACs, ethertype ARP, 28 bytes of ARP
  arp.push_back(0x08);
  arp.push_back(0x06);
  arp.resize(14 + 28, 0);
  w.add_frame(arp);
  w.write_file(dir.file("ok.pcap"));

  const auto r = run_checker("--json " + dir.file("ok.pcap"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "\"frames\":10"));
  CHECK(contains(r.output, "\"roce_packets\":8"));
  CHECK(contains(r.output, "\"valid\":8"));
  CHECK(contains(r.output, "\"invalid\":0"));
  CHECK(contains(r.output, "\"other_ip\":1"));
  CHECK(contains(r.output, "\"non_ip\":1"));
  CHECK(contains(r.output, "\"RC_RDMA_WRITE_FIRST\":1"));
  CHECK(contains(r.output, "\"RC_ACKNOWLEDGE\":2"));
  CHECK(contains(r.output, "\"RC_RDMA_READ_RESPONSE_ONLY\":1"));
  CHECK(contains(r.output, "{\"tos\":106,\"dscp\":26,\"ecn\":2,\"packets\":8}"));

  // The JSON is well-formed (Python's parser is the independent judge).
  const std::string py =
      "python3 -c \"import json,sys; d=json.load(open(sys.argv[1])); "
      "sys.exit(0 if d['valid']==8 else 1)\" ";
  { std::ofstream(dir.file("out.json")) << r.output; }
  CHECK(std::system((py + dir.file("out.json")).c_str()) == 0);

  const auto text = run_checker(dir.file("ok.pcap"));
  CHECK(text.status == 0);
  CHECK(contains(text.output, "valid ICRC:      8"));
  CHECK(contains(text.output, "dscp 26 ecn 2"));
}

TEST_CASE("pcap-icrc-check: one corrupted packet fails the capture and is named", "[wire][pcap]") {
  TempDir dir;
  PcapWriter w({});
  auto packets = conversation(test_flow_v4(), 0);
  // Flip one payload bit of the 5th packet (the SEND WITH IMMEDIATE), after IP+UDP+BTH+ImmDt.
  packets[4][20 + 8 + 12 + 4 + 2] ^= 0x10;
  for (const auto& p : packets) {
    w.add(p);
  }
  w.write_file(dir.file("bad.pcap"));
  const auto r = run_checker("--json " + dir.file("bad.pcap"));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(contains(r.output, "\"valid\":7"));
  CHECK(contains(r.output, "\"invalid\":1"));
  CHECK(contains(r.output, "\"frame\":5,\"kind\":\"invalid ICRC\""));
  CHECK(contains(r.output, "\"opcode\":\"RC_SEND_ONLY_WITH_IMMEDIATE\",\"dest_qp\":17,\"psn\":4"));
}

TEST_CASE("pcap-icrc-check: every file format and link type", "[wire][pcap]") {
  TempDir dir;
  struct Case {
    const char* name;
    PcapOptions options;
    FlowAddress flow;
  };
  const Case cases[] = {
      {"eth-v6.pcap", {}, test_flow_v6()},
      {"swapped-ns.pcap", {LinkType::Ethernet, true, true, 65535}, test_flow_v4()},
      {"ns.pcap", {LinkType::Ethernet, false, true, 65535}, test_flow_v6()},
      {"sll.pcap", {LinkType::LinuxSll, false, false, 65535}, test_flow_v4()},
      {"sll2.pcap", {LinkType::LinuxSll2, true, false, 65535}, test_flow_v6()},
      {"raw.pcap", {LinkType::Raw, false, false, 65535}, test_flow_v4()},
      {"raw-v6.pcap", {LinkType::Raw, true, true, 65535}, test_flow_v6()},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    PcapWriter w(c.options);
    for (const auto& p : conversation(c.flow, 0x2A)) {
      w.add(p);
    }
    w.write_file(dir.file(c.name));
    const auto r = run_checker("--json " + dir.file(c.name));
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(contains(r.output, "\"valid\":8"));
    CHECK(contains(r.output, c.flow.family == IpFamily::V4 ? "\"ipv4\":8" : "\"ipv6\":8"));
    CHECK(contains(r.output, "\"dscp\":10,\"ecn\":2"));
  }
  for (const bool swapped : {false, true}) {
    PcapngWriter w(swapped);
    for (const auto& p : conversation(test_flow_v4(), 0)) {
      w.add(p);
    }
    const std::string name = swapped ? "be.pcapng" : "le.pcapng";
    w.write_file(dir.file(name));
    const auto r = run_checker("--json " + dir.file(name));
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(contains(r.output, "\"format\":\"pcapng\""));
    CHECK(contains(r.output, "\"valid\":8"));
  }
}

TEST_CASE("pcap-icrc-check: the ConnectX-4 Lx CNP frame checks out", "[wire][pcap]") {
  TempDir dir;
  const auto frame = from_hex(kConnectX4LxCnpFrame);
  PcapWriter w({LinkType::Raw});
  w.add(std::vector<std::uint8_t>(frame.begin() + 14, frame.end()));
  w.write_file(dir.file("cnp.pcap"));
  const auto r = run_checker("--json " + dir.file("cnp.pcap"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "\"valid\":1"));
  CHECK(contains(r.output, "\"CNP\":1"));
  CHECK(contains(r.output, "{\"tos\":194,\"dscp\":48,\"ecn\":2,\"packets\":1}"));
}

TEST_CASE("pcap-icrc-check: packets cut by the snap length are unverifiable", "[wire][pcap]") {
  TempDir dir;
  PcapWriter w({LinkType::Ethernet, false, false, 200});
  const auto packets = conversation(test_flow_v4(), 0);
  for (const auto& p : packets) {
    w.add(p, 200);
  }
  w.write_file(dir.file("snap.pcap"));
  const auto r = run_checker("--json " + dir.file("snap.pcap"));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(contains(r.output, "\"unverifiable\":3"));  // the three 1 KiB WRITE packets
  CHECK(contains(r.output, "snap length too small"));
}

TEST_CASE("pcap-icrc-check: IPv4 options and fragments cannot be verified", "[wire][pcap]") {
  TempDir dir;
  const auto pkt = built(headers(Opcode::SendOnly, 1), 8, test_flow_v4());
  const auto plain = ip_udp_packet(test_flow_v4(), 0, 64, pkt);
  // IHL 6: four bytes of options (NOP padding) between the IPv4 and UDP headers.
  auto options = plain;
  options.insert(options.begin() + 20, {1, 1, 1, 0});
  options[0] = 0x46;
  store_be16(&options[2], static_cast<std::uint16_t>(options.size()));
  // A first fragment (MF set) still shows its UDP header; a later one does not.
  auto first_fragment = plain;
  first_fragment[6] = 0x20;
  auto later_fragment = plain;
  store_be16(&later_fragment[6], 0x0010);
  PcapWriter w({});
  w.add(options);
  w.add(first_fragment);
  w.add(later_fragment);
  w.add(plain);
  w.write_file(dir.file("frag.pcap"));
  const auto r = run_checker("--json " + dir.file("frag.pcap"));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(contains(r.output, "\"roce_packets\":3"));
  CHECK(contains(r.output, "\"valid\":1"));
  CHECK(contains(r.output, "\"unverifiable\":2"));
  CHECK(contains(r.output, "\"other_ip\":1"));
  CHECK(contains(r.output, "IPv4 options or IPv6 extension headers"));
  CHECK(contains(r.output, "IP fragment"));
}

TEST_CASE("pcap-icrc-check: --strict fails on headers that do not parse", "[wire][pcap]") {
  TempDir dir;
  // A UC SEND ONLY (opcode 0x24) with a correct ICRC: valid, but not an RC packet.
  auto pkt = built(headers(Opcode::SendOnly, 1), 8, test_flow_v4());
  pkt[0] = 0x24;
  reseal(pkt, test_flow_v4());
  PcapWriter w({});
  w.add(ip_udp_packet(test_flow_v4(), 0, 64, pkt));
  w.write_file(dir.file("uc.pcap"));
  const auto plain = run_checker("--json " + dir.file("uc.pcap"));
  INFO(plain.output);
  CHECK(plain.status == 0);
  CHECK(contains(plain.output, "\"header_errors\":1"));
  CHECK(contains(plain.output, "\"UNKNOWN_0x24\":1"));
  CHECK(run_checker("--strict " + dir.file("uc.pcap")).status == 1);
}

TEST_CASE("pcap-icrc-check: malformed files and bad arguments exit with status 2", "[wire][pcap]") {
  TempDir dir;
  PcapWriter w({});
  for (const auto& p : conversation(test_flow_v4(), 0)) {
    w.add(p);
  }
  const auto& good = w.bytes();
  auto write = [&](const std::string& name, const std::vector<std::uint8_t>& bytes) {
    std::ofstream f(dir.file(name), std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  };
  write("cut-record.pcap", std::vector<std::uint8_t>(good.begin(), good.end() - 10));
  write("cut-header.pcap", std::vector<std::uint8_t>(good.begin(), good.begin() + 30));
  write("short.pcap", std::vector<std::uint8_t>(good.begin(), good.begin() + 10));
  write("text.pcap", {'h', 'e', 'l', 'l', 'o', '\n'});
  auto bad_link = good;
  store_le32(&bad_link[20], 105);  // IEEE 802.11
  write("wifi.pcap", bad_link);
  auto bad_len = good;
  store_le32(&bad_len[24 + 8], 0x7FFFFFFF);
  write("huge-record.pcap", bad_len);

  for (const char* name : {"cut-record.pcap", "cut-header.pcap", "short.pcap", "text.pcap",
                           "wifi.pcap", "huge-record.pcap"}) {
    const auto r = run_checker(dir.file(name));
    INFO(name << ": " << r.output);
    CHECK(r.status == 2);
    CHECK(contains(r.output, "pcap-icrc-check: "));
  }
  CHECK(contains(run_checker(dir.file("text.pcap")).output, "not a pcap or pcapng file"));
  CHECK(contains(run_checker(dir.file("wifi.pcap")).output, "not supported"));
  CHECK(run_checker(dir.file("missing.pcap")).status == 2);
  CHECK(run_checker("").status == 2);
  CHECK(run_checker("--bogus x").status == 2);
  CHECK(run_checker("--help").status == 0);
}
