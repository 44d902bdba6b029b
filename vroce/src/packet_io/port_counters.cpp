#include "packet_io/port_counters.h"

#include <iterator>

namespace vroce::packet_io {
namespace {

constexpr PortCounterInfo kInfo[] = {
    {"out_of_sequence", "hw_counters", 1},
    {"duplicate_request", "hw_counters", 1},
    {"packet_seq_err", "hw_counters", 1},
    {"implied_nak_seq_err", "hw_counters", 1},
    {"local_ack_timeout_err", "hw_counters", 1},
    {"rnr_nak_retry_err", "hw_counters", 1},
    {"np_ecn_marked_roce_packets", "hw_counters", 1},
    {"np_cnp_sent", "hw_counters", 1},
    {"rp_cnp_handled", "hw_counters", 1},
    {"port_xmit_data", "counters", 4},
    {"port_rcv_data", "counters", 4},
    {"port_xmit_packets", "counters", 1},
    {"port_rcv_packets", "counters", 1},
    {"port_rcv_errors", "counters", 1},
    {"port_xmit_discards", "counters", 1},
};
static_assert(std::size(kInfo) == kPortCounterCount);

}  // namespace

const PortCounterInfo& port_counter_info(PortCounter counter) noexcept {
  return kInfo[static_cast<size_t>(counter)];
}

PortCounters::Snapshot PortCounters::snapshot() const noexcept {
  Snapshot s{};
  for (size_t i = 0; i < kPortCounterCount; ++i) {
    s[i] = counters_[i].get();
  }
  return s;
}

}  // namespace vroce::packet_io
