// Traffic-class and service-level agreement; see class_negotiation.h.
#include "core/class_negotiation.h"

#include <fmt/format.h>

namespace roce {

std::optional<ClassAgreement> agree_on_class(const ClassOffer& local, const ClassOffer& peer,
                                             const char* local_role, const char* peer_role,
                                             std::string* error) {
  ClassAgreement agreed;
  if (local.configured && peer.configured && local.traffic_class != peer.traffic_class) {
    *error = fmt::format(
        "traffic class mismatch: the {} (this side) runs on tc {} (dscp {}, from {}) but the {} "
        "runs on tc {} (dscp {}, from {}); set the same NCCL_ROCE_TC / NCCL_IB_TC (or "
        "communicator trafficClass) on both sides",
        local_role, local.traffic_class, local.traffic_class >> 2, local.source, peer_role,
        peer.traffic_class, peer.traffic_class >> 2, peer.source);
    return std::nullopt;
  }
  if (local.configured) {
    agreed.traffic_class = local.traffic_class;
  } else if (peer.configured) {
    agreed.traffic_class = peer.traffic_class;
  } else {
    agreed.traffic_class = 0;
  }
  agreed.configured = local.configured || peer.configured;

  if (local.sl_configured && peer.sl_configured && local.service_level != peer.service_level) {
    *error = fmt::format(
        "service level mismatch: the {} (this side) uses NCCL_IB_SL={} but the {} uses "
        "NCCL_IB_SL={}; set the same NCCL_IB_SL on both sides",
        local_role, local.service_level, peer_role, peer.service_level);
    return std::nullopt;
  }
  agreed.service_level = local.sl_configured  ? local.service_level
                         : peer.sl_configured ? peer.service_level
                                              : 0;
  return agreed;
}

std::optional<ClassAgreement> apply_host_override(const ClassAgreement& agreed,
                                                  std::optional<int> override_class,
                                                  const std::string& where, std::string* error) {
  if (!override_class || *override_class == agreed.traffic_class) {
    return agreed;
  }
  if (agreed.configured) {
    *error = fmt::format(
        "the host-wide traffic class override {} = {} (dscp {}) would rewrite the configured tc "
        "{} (dscp {}) of every QP; clear it (echo -1 > {}) or configure tc {}",
        where, *override_class, *override_class >> 2, agreed.traffic_class,
        agreed.traffic_class >> 2, where, *override_class);
    return std::nullopt;
  }
  ClassAgreement result = agreed;
  result.traffic_class = *override_class;
  return result;
}

}  // namespace roce
