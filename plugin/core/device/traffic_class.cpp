// Traffic-class resolution and its description for logs (see core/device/traffic_class.h).
#include "core/device/traffic_class.h"

namespace roce {

Result<TrafficClassChoice> resolve_traffic_class(const Config& config, int comm_traffic_class) {
  if (comm_traffic_class != kTrafficClassUndefined && !valid_traffic_class(comm_traffic_class)) {
    return failure(
        "the communicator's trafficClass " + std::to_string(comm_traffic_class) +
        " is out of range 0..255 (or NCCL_NET_TRAFFIC_CLASS_UNDEF); fix the trafficClass "
        "in the ncclConfig_t passed to ncclCommInitRankConfig");
  }
  TrafficClassChoice choice;
  if (config.traffic_class) {
    choice.traffic_class = *config.traffic_class;
    choice.source = config.traffic_class_source;
    if (comm_traffic_class != kTrafficClassUndefined &&
        comm_traffic_class != *config.traffic_class) {
      choice.overridden_comm_class = comm_traffic_class;
    }
  } else if (comm_traffic_class != kTrafficClassUndefined) {
    choice.traffic_class = comm_traffic_class;
    choice.source = TrafficClassSource::CommConfig;
  }
  if (!valid_traffic_class(choice.traffic_class)) {
    return failure(std::string(traffic_class_source_name(choice.source)) + " gives traffic class " +
                   std::to_string(choice.traffic_class) + ", outside 0..255");
  }
  choice.service_level = config.service_level.value_or(0);
  if (!valid_service_level(choice.service_level)) {
    return failure("NCCL_IB_SL=" + std::to_string(choice.service_level) + " is outside 0..15");
  }
  return choice;
}

std::string describe_traffic_class(int traffic_class) {
  if (!valid_traffic_class(traffic_class)) {
    return "tc " + std::to_string(traffic_class) + " (invalid, outside 0..255)";
  }
  static constexpr const char* kEcn[] = {"not-ect", "ect(1)", "ect(0)", "ce"};
  return "tc " + std::to_string(traffic_class) + " = dscp " +
         std::to_string(dscp_of(traffic_class)) + " + " + kEcn[ecn_of(traffic_class)];
}

const char* traffic_class_source_name(TrafficClassSource source) {
  switch (source) {
    case TrafficClassSource::NcclRoceTc:
      return "NCCL_ROCE_TC";
    case TrafficClassSource::NcclRoceDscp:
      return "NCCL_ROCE_DSCP";
    case TrafficClassSource::NcclIbTc:
      return "NCCL_IB_TC";
    case TrafficClassSource::CommConfig:
      return "communicator trafficClass";
    case TrafficClassSource::Default:
      break;
  }
  return "default";
}

}  // namespace roce
