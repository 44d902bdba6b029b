// Helpers shared by the wire tests (see test_util.h).
#include "test_util.h"

#include <random>
#include <stdexcept>

#include "wire/byte_order.h"
#include "wire/icrc.h"

namespace vroce::wire::test {

std::vector<std::uint8_t> from_hex(std::string_view hex) {
  std::vector<std::uint8_t> out;
  int hi = -1;
  for (const char c : hex) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      continue;
    } else {
      throw std::invalid_argument("from_hex: not a hex digit");
    }
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<std::uint8_t>(hi << 4 | v));
      hi = -1;
    }
  }
  if (hi >= 0) {
    throw std::invalid_argument("from_hex: odd number of digits");
  }
  return out;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) {
    b = static_cast<std::uint8_t>(rng());
  }
  return out;
}

void reseal(std::vector<std::uint8_t>& udp_payload, const FlowAddress& flow) {
  const auto icrc = icrc_compute(flow, udp_payload);
  if (!icrc) {
    throw std::invalid_argument("reseal: packet shorter than BTH + ICRC");
  }
  store_le32(udp_payload.data() + udp_payload.size() - 4, *icrc);
}

FlowAddress test_flow_v4() {
  return flow_v4(0x7F00000B, 0x7F00000C, 0xC001);
}

FlowAddress test_flow_v6() {
  FlowAddress f;
  f.family = IpFamily::V6;
  f.src_ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  f.dst_ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  f.src_port = 0xD000;
  f.dst_port = kRoceUdpPort;
  return f;
}

}  // namespace vroce::wire::test
