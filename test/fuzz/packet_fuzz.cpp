// libFuzzer target: vroce's packet parser (vroce/src/wire parse_packet), structure only (ICRC
// skipped, so the fuzzer gets past the checksum) and with the ICRC verified. Properties: a parsed
// payload lies inside the input, and a packet that parses with its ICRC verified also parses
// with it skipped, to the same opcode and payload.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "wire/packet.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vroce::wire;
  const ByteSpan bytes(data, size);
  ParseOptions skip;
  skip.icrc = IcrcPolicy::Skip;
  const ParseResult structural = parse_packet(bytes, skip);
  if (structural.ok()) {
    const auto& p = structural.view.payload;
    if (!p.empty() && (p.data() < data || p.data() + p.size() > data + size)) {
      std::abort();
    }
  }
  ParseOptions verify;
  const ParseResult checked = parse_packet(bytes, verify);
  if (checked.ok()) {
    if (!structural.ok() || checked.view.opcode() != structural.view.opcode() ||
        checked.view.payload.size() != structural.view.payload.size()) {
      std::abort();
    }
  }
  return 0;
}
