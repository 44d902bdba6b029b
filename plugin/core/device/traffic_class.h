// The traffic class a connection runs on, where it came from, and how to print it. Pure: it
// combines the Config (environment) with the communicator's class (ncclNet v10 connect config,
// v11 init config), so precedence is unit-tested without a device.
//
// Precedence: NCCL_ROCE_TC > NCCL_ROCE_DSCP > NCCL_IB_TC (all resolved into Config) > the
// communicator's trafficClass > 0. The service level is NCCL_IB_SL, else 0.
#pragma once

#include <optional>
#include <string>

#include "roce/result.h"
#include "util/config.h"

namespace roce {

inline constexpr int kTrafficClassUndefined = -1;  // NCCL_NET_TRAFFIC_CLASS_UNDEF
inline constexpr int kMaxTrafficClass = 255;
inline constexpr int kMaxServiceLevel = 15;

struct TrafficClassChoice {
  int traffic_class = 0;
  TrafficClassSource source = TrafficClassSource::Default;
  int service_level = 0;
  // Set when the environment overrode a communicator class that differs, for the init log.
  std::optional<int> overridden_comm_class;
};

// comm_traffic_class: the communicator's class, or kTrafficClassUndefined. Fails when the
// communicator's class is out of range. NCCL_IB_FIFO_TC is not part of the choice: it applies to
// the receiver's data QPs only (ConnectionSettings).
Result<TrafficClassChoice> resolve_traffic_class(const Config& config, int comm_traffic_class);

constexpr bool valid_traffic_class(int traffic_class) {
  return traffic_class >= 0 && traffic_class <= kMaxTrafficClass;
}
constexpr bool valid_service_level(int service_level) {
  return service_level >= 0 && service_level <= kMaxServiceLevel;
}
constexpr int dscp_of(int traffic_class) {
  return traffic_class >> 2;
}
constexpr int ecn_of(int traffic_class) {
  return traffic_class & 0x3;
}

// "tc 106 = dscp 26 + ect(0)"; the ECN part is not-ect, ect(1), ect(0) or ce.
std::string describe_traffic_class(int traffic_class);

// "NCCL_ROCE_TC", "NCCL_ROCE_DSCP", "NCCL_IB_TC", "communicator trafficClass", "default".
const char* traffic_class_source_name(TrafficClassSource source);

}  // namespace roce
