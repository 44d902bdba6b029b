// Classic pcap writer for tests (see pcap_writer.h).
#include "pcap_writer.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "wire/byte_order.h"

namespace vroce::wire::test {
namespace {

std::uint16_t ipv4_checksum(const std::uint8_t* h) {
  std::uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) {
    sum += load_be16(h + i);
  }
  while (sum >> 16) {
    sum = (sum & 0xFFFF) + (sum >> 16);
  }
  return static_cast<std::uint16_t>(~sum);
}

}  // namespace

std::vector<std::uint8_t> ip_udp_packet(const FlowAddress& flow, std::uint8_t traffic_class,
                                        std::uint8_t ttl,
                                        const std::vector<std::uint8_t>& udp_payload) {
  const std::size_t udp_len = 8 + udp_payload.size();
  std::vector<std::uint8_t> p;
  if (flow.family == IpFamily::V4) {
    p.resize(20);
    p[0] = 0x45;
    p[1] = traffic_class;
    store_be16(&p[2], static_cast<std::uint16_t>(20 + udp_len));
    store_be16(&p[6], 0x4000);
    p[8] = ttl;
    p[9] = 17;
    std::copy_n(flow.src_ip.begin(), 4, p.begin() + 12);
    std::copy_n(flow.dst_ip.begin(), 4, p.begin() + 16);
    store_be16(&p[10], ipv4_checksum(p.data()));
  } else {
    p.resize(40);
    store_be32(&p[0], 0x60000000u | (std::uint32_t{traffic_class} << 20) | 0x12345);  // flow label
    store_be16(&p[4], static_cast<std::uint16_t>(udp_len));
    p[6] = 17;
    p[7] = ttl;
    std::copy(flow.src_ip.begin(), flow.src_ip.end(), p.begin() + 8);
    std::copy(flow.dst_ip.begin(), flow.dst_ip.end(), p.begin() + 24);
  }
  const std::size_t u = p.size();
  p.resize(u + 8);
  store_be16(&p[u], flow.src_port);
  store_be16(&p[u + 2], flow.dst_port);
  store_be16(&p[u + 4], static_cast<std::uint16_t>(udp_len));
  store_be16(&p[u + 6], 0);  // no UDP checksum, as RoCE NICs commonly send
  p.insert(p.end(), udp_payload.begin(), udp_payload.end());
  return p;
}

PcapWriter::PcapWriter(PcapOptions options) : options_(options) {
  put32(options.nanosecond ? 0xa1b23c4du : 0xa1b2c3d4u);
  put16(2);
  put16(4);
  put32(0);
  put32(0);
  put32(options.snaplen);
  put32(static_cast<std::uint32_t>(options.link));
}

void PcapWriter::put32(std::uint32_t v) {
  std::uint8_t b[4];
  if (options_.swapped) {
    store_be32(b, v);
  } else {
    store_le32(b, v);
  }
  bytes_.insert(bytes_.end(), b, b + 4);
}

void PcapWriter::put16(std::uint16_t v) {
  const std::uint8_t lo = static_cast<std::uint8_t>(v);
  const std::uint8_t hi = static_cast<std::uint8_t>(v >> 8);
  if (options_.swapped) {
    bytes_.push_back(hi);
    bytes_.push_back(lo);
  } else {
    bytes_.push_back(lo);
    bytes_.push_back(hi);
  }
}

void PcapWriter::add(const std::vector<std::uint8_t>& ip_packet, std::uint32_t captured_len) {
  const bool v6 = !ip_packet.empty() && (ip_packet[0] >> 4) == 6;
  const std::uint16_t ethertype = v6 ? 0x86DD : 0x0800;
  std::vector<std::uint8_t> frame;
  switch (options_.link) {
    case LinkType::Ethernet:
      frame.assign(12, 0);  // loopback captures carry zero MACs
      frame.push_back(static_cast<std::uint8_t>(ethertype >> 8));
      frame.push_back(static_cast<std::uint8_t>(ethertype));
      break;
    case LinkType::Raw:
      break;
    case LinkType::LinuxSll:
      frame.assign(16, 0);
      store_be16(&frame[0], 4);  // packet type: sent by us
      store_be16(&frame[2], 1);  // ARPHRD_ETHER
      store_be16(&frame[4], 6);  // address length
      store_be16(&frame[14], ethertype);
      break;
    case LinkType::LinuxSll2:
      frame.assign(20, 0);
      store_be16(&frame[0], ethertype);
      store_be32(&frame[4], 7);  // interface index
      store_be16(&frame[8], 1);  // ARPHRD_ETHER
      frame[10] = 4;             // packet type
      frame[11] = 6;             // address length
      break;
  }
  frame.insert(frame.end(), ip_packet.begin(), ip_packet.end());
  add_frame(frame, captured_len);
}

void PcapWriter::add_frame(const std::vector<std::uint8_t>& frame, std::uint32_t captured_len) {
  const std::uint32_t orig = static_cast<std::uint32_t>(frame.size());
  const std::uint32_t incl = std::min(orig, captured_len);
  ++count_;
  put32(1700000000u + count_);
  put32(options_.nanosecond ? count_ * 1000u : count_);
  put32(incl);
  put32(orig);
  bytes_.insert(bytes_.end(), frame.begin(), frame.begin() + incl);
}

namespace {

void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) {
    throw std::runtime_error("cannot write " + path);
  }
}

}  // namespace

void PcapWriter::write_file(const std::string& path) const {
  write_bytes(path, bytes_);
}

PcapngWriter::PcapngWriter(bool swapped) : swapped_(swapped) {
  // Section header block: type, length 28, byte-order magic, version 1.0, section length -1.
  put32(0x0a0d0d0a);
  put32(28);
  put32(0x1a2b3c4d);
  put16(1);
  put16(0);
  put32(0xFFFFFFFF);
  put32(0xFFFFFFFF);
  put32(28);
  // Interface description block: Ethernet, snap length 262144, no options.
  put32(1);
  put32(20);
  put16(1);
  put16(0);
  put32(262144);
  put32(20);
}

void PcapngWriter::put32(std::uint32_t v) {
  std::uint8_t b[4];
  if (swapped_) {
    store_be32(b, v);
  } else {
    store_le32(b, v);
  }
  bytes_.insert(bytes_.end(), b, b + 4);
}

void PcapngWriter::put16(std::uint16_t v) {
  const std::uint8_t lo = static_cast<std::uint8_t>(v);
  const std::uint8_t hi = static_cast<std::uint8_t>(v >> 8);
  bytes_.push_back(swapped_ ? hi : lo);
  bytes_.push_back(swapped_ ? lo : hi);
}

void PcapngWriter::add(const std::vector<std::uint8_t>& ip_packet) {
  const bool v6 = !ip_packet.empty() && (ip_packet[0] >> 4) == 6;
  std::vector<std::uint8_t> frame(12, 0);
  frame.push_back(v6 ? 0x86 : 0x08);
  frame.push_back(v6 ? 0xDD : 0x00);
  frame.insert(frame.end(), ip_packet.begin(), ip_packet.end());
  const std::size_t padded = (frame.size() + 3) & ~std::size_t{3};
  const auto block_len = static_cast<std::uint32_t>(32 + padded);
  put32(6);
  put32(block_len);
  put32(0);  // interface 0
  put32(0);  // timestamp, high word
  put32(0);  // timestamp, low word
  put32(static_cast<std::uint32_t>(frame.size()));
  put32(static_cast<std::uint32_t>(frame.size()));
  bytes_.insert(bytes_.end(), frame.begin(), frame.end());
  bytes_.insert(bytes_.end(), padded - frame.size(), std::uint8_t{0});
  put32(block_len);
}

void PcapngWriter::write_file(const std::string& path) const {
  write_bytes(path, bytes_);
}

}  // namespace vroce::wire::test
