// The counters a ConnectX keeps per port, under the names and units mlx5 gives them in sysfs:
// ports/<p>/hw_counters (RoCE transport errors and congestion notification) and ports/<p>/counters
// (the IB port counters). Counted by this process's engine of the device, alongside the
// process-wide Stats; the fake sysfs tree publishes them (sysfs/port_counter_files.h), which is
// where the plugin and scripts read them, as they would read a NIC's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "stats/stats.h"

namespace vroce::packet_io {

enum class PortCounter : uint8_t {
  // hw_counters: the responder side
  OutOfSequence,     // request packets received ahead of the expected PSN (a gap: loss)
  DuplicateRequest,  // request packets received again (below the expected PSN)
  // hw_counters: the requester side
  PacketSeqErr,        // NAK sequence errors received (the responder saw a gap)
  ImpliedNakSeqErr,    // ACKs or READ responses that implied lost READ responses
  LocalAckTimeoutErr,  // local ACK timer expirations
  RnrNakRetryErr,      // RNR NAKs received
  // hw_counters: congestion notification (RoCEv2 ECN)
  NpEcnMarkedRocePackets,  // packets received with ECN CE (notification point)
  NpCnpSent,               // CNPs sent in answer (notification point)
  RpCnpHandled,            // CNPs received for a QP of this port (reaction point)
  // counters: the port
  PortXmitData,  // octets sent (IP, UDP and RoCE headers, payload, ICRC); the file holds /4
  PortRcvData,   // octets received; the file holds /4
  PortXmitPackets,
  PortRcvPackets,
  PortRcvErrors,     // packets received and dropped as malformed (parse errors, bad ICRC)
  PortXmitDiscards,  // packets the port could not send (socket refused them, link down)
  kCount
};

inline constexpr size_t kPortCounterCount = static_cast<size_t>(PortCounter::kCount);

struct PortCounterInfo {
  const char* name;   // the file name, mlx5's
  const char* group;  // "hw_counters" or "counters"
  uint32_t divisor;   // the file holds value / divisor (4 for the data counters: words)
};

const PortCounterInfo& port_counter_info(PortCounter counter) noexcept;

class PortCounters {
 public:
  using Snapshot = std::array<uint64_t, kPortCounterCount>;

  void add(PortCounter counter, uint64_t n = 1) noexcept {
    counters_[static_cast<size_t>(counter)].add(n);
  }
  uint64_t get(PortCounter counter) const noexcept {
    return counters_[static_cast<size_t>(counter)].get();
  }
  Snapshot snapshot() const noexcept;

 private:
  Counter counters_[kPortCounterCount];
};

}  // namespace vroce::packet_io
