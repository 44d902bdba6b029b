// Writes classic pcap (and pcapng) files for the pcap-icrc-check tests: RoCEv2 packets framed as a
// capture would hold them (Ethernet, Linux cooked SLL/SLL2 or raw IP), in either byte order and
// with microsecond or nanosecond timestamps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wire/flow.h"

namespace vroce::wire::test {

enum class LinkType : std::uint32_t { Ethernet = 1, Raw = 101, LinuxSll = 113, LinuxSll2 = 276 };

struct PcapOptions {
  LinkType link = LinkType::Ethernet;
  bool swapped = false;     // write the file in the other byte order
  bool nanosecond = false;  // 0xa1b23c4d magic
  std::uint32_t snaplen = 262144;
};

// An IPv4 or IPv6 + UDP packet around `udp_payload`, with the header fields vroce's socket path
// produces (IPv4 ID 0, DF) and the given traffic class and TTL.
std::vector<std::uint8_t> ip_udp_packet(const FlowAddress& flow, std::uint8_t traffic_class,
                                        std::uint8_t ttl,
                                        const std::vector<std::uint8_t>& udp_payload);

class PcapWriter {
 public:
  explicit PcapWriter(PcapOptions options);
  // Adds one captured IP packet, framed for the link type; orig_len defaults to its size.
  void add(const std::vector<std::uint8_t>& ip_packet, std::uint32_t captured_len = UINT32_MAX);
  // Adds a frame exactly as given (for frames that carry no IP packet).
  void add_frame(const std::vector<std::uint8_t>& frame, std::uint32_t captured_len = UINT32_MAX);
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }
  void write_file(const std::string& path) const;

 private:
  void put32(std::uint32_t v);
  void put16(std::uint16_t v);

  PcapOptions options_;
  std::vector<std::uint8_t> bytes_;
  std::uint32_t count_ = 0;
};

// pcapng as tshark/dumpcap write it: a section header, one interface description and enhanced
// packet blocks (link type Ethernet).
class PcapngWriter {
 public:
  explicit PcapngWriter(bool swapped = false);
  void add(const std::vector<std::uint8_t>& ip_packet);
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }
  void write_file(const std::string& path) const;

 private:
  void put32(std::uint32_t v);
  void put16(std::uint16_t v);

  bool swapped_;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace vroce::wire::test
