// Small helpers shared by the wire tests: hex strings to bytes, seeded random bytes, and
// rewriting a packet's ICRC after a test has deliberately broken some other field.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "wire/flow.h"

namespace vroce::wire::test {

// "0a0b 0c" -> {0x0a, 0x0b, 0x0c}; whitespace is ignored.
std::vector<std::uint8_t> from_hex(std::string_view hex);

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed);

// Recomputes and stores the socket-path ICRC of a UDP payload in place.
void reseal(std::vector<std::uint8_t>& udp_payload, const FlowAddress& flow);

FlowAddress test_flow_v4();
FlowAddress test_flow_v6();

}  // namespace vroce::wire::test
