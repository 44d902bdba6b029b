// Receiver-side filling of CTS slots; see cts_ring.h for the protocol.
#include "core/datapath/cts_ring.h"

namespace roce {

size_t fill_cts_slot(std::span<CtsEntry> out, std::span<const CtsBuffer> buffers, uint64_t seq,
                     uint16_t request) noexcept {
  const auto n = static_cast<uint8_t>(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    CtsEntry& e = out[i];
    e.addr = buffers[i].addr;
    e.size = buffers[i].size;
    e.rkey = buffers[i].rkey;
    e.tag = buffers[i].tag;
    e.request = request;
    e.count = n;
    e.reserved = 0;
    e.seq = seq;
  }
  return buffers.size() * sizeof(CtsEntry);
}

}  // namespace roce
