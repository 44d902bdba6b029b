// Traffic-class and service-level agreement; see class_negotiation.h.
#include "core/connect/class_negotiation.h"

#include <fmt/format.h>

namespace roce {

Result<ClassAgreement> receiver_agree(const ClassOffer& receiver, int sender_class, int sender_sl) {
  if (receiver.configured && receiver.traffic_class != sender_class) {
    return failure(fmt::format(
        "traffic class mismatch: the receiver runs on tc {} (dscp {}, from {}) but the sender "
        "asks for tc {} (dscp {}); set the same NCCL_ROCE_TC / NCCL_IB_TC, or the same "
        "communicator trafficClass, on both sides",
        receiver.traffic_class, receiver.traffic_class >> 2, receiver.source, sender_class,
        sender_class >> 2));
  }
  if (receiver.sl_configured && receiver.service_level != sender_sl) {
    return failure(fmt::format(
        "service level mismatch: the receiver uses NCCL_IB_SL={} but the sender uses sl {}; set "
        "the same NCCL_IB_SL on both sides",
        receiver.service_level, sender_sl));
  }
  ClassAgreement agreed;
  agreed.traffic_class = sender_class;
  agreed.service_level = sender_sl;
  agreed.configured = receiver.configured;
  return agreed;
}

Result<ClassAgreement> sender_accept(const ClassOffer& sender, int receiver_class,
                                     int receiver_sl) {
  if (sender.configured && sender.traffic_class != receiver_class) {
    return failure(fmt::format(
        "traffic class mismatch: the sender runs on tc {} (dscp {}, from {}) but the receiver "
        "applies tc {} (dscp {}); set the same NCCL_ROCE_TC / NCCL_IB_TC, or the same "
        "communicator trafficClass, on both sides",
        sender.traffic_class, sender.traffic_class >> 2, sender.source, receiver_class,
        receiver_class >> 2));
  }
  if (sender.sl_configured && sender.service_level != receiver_sl) {
    return failure(fmt::format(
        "service level mismatch: the sender uses NCCL_IB_SL={} but the receiver applies sl {}; set "
        "the same NCCL_IB_SL on both sides",
        sender.service_level, receiver_sl));
  }
  ClassAgreement agreed;
  agreed.traffic_class = receiver_class;
  agreed.service_level = receiver_sl;
  agreed.configured = sender.configured;
  return agreed;
}

Result<ClassAgreement> apply_host_override(const ClassAgreement& agreed,
                                           std::optional<int> override_class,
                                           const std::string& where) {
  if (!override_class || *override_class == agreed.traffic_class) {
    return agreed;
  }
  if (agreed.configured) {
    return failure(fmt::format(
        "the host-wide traffic class override {} = {} (dscp {}) would rewrite the configured tc "
        "{} (dscp {}) of every QP; clear the override or configure tc {}",
        where, *override_class, *override_class >> 2, agreed.traffic_class,
        agreed.traffic_class >> 2, *override_class));
  }
  ClassAgreement result = agreed;
  result.traffic_class = *override_class;
  return result;
}

}  // namespace roce
