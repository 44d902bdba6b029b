// How the two ends of a connection agree on the traffic class and service level they run on.
// Pure: unit-tested without a device.
//
// Each side offers its class and whether it was configured (NCCL_ROCE_TC, NCCL_ROCE_DSCP,
// NCCL_IB_TC, or the communicator's class) or is only the default. A configured class is
// insisted on: two configured classes that differ are an error naming both; a side without a
// configuration adopts the peer's configured class (the receiver of a v10 connection never sees
// the communicator's class, which arrives at connect); with neither configured, both run on 0.
// The service level (NCCL_IB_SL) follows the same rule. A host-wide override that would rewrite
// the agreed class (mlx5's tc/<port>/traffic_class) is an error when a class was configured, and
// otherwise becomes the class in force (the QP read-back would see it anyway).
#pragma once

#include <optional>
#include <string>

namespace roce {

struct ClassOffer {
  int traffic_class = 0;
  bool configured = false;  // false: the default, willing to adopt the peer's
  int service_level = 0;
  bool sl_configured = false;
  std::string source;  // "NCCL_ROCE_TC=104", "communicator trafficClass 104", "default"
};

struct ClassAgreement {
  int traffic_class = 0;
  int service_level = 0;
  bool configured = false;  // some side configured the class: running on another is an error
};

// `local_role`/`peer_role` ("sender", "receiver") name the sides in the error.
std::optional<ClassAgreement> agree_on_class(const ClassOffer& local, const ClassOffer& peer,
                                             const char* local_role, const char* peer_role,
                                             std::string* error);

// Applies a host-wide override (nullopt: none) to an agreement. `where` names the file.
std::optional<ClassAgreement> apply_host_override(const ClassAgreement& agreed,
                                                  std::optional<int> override_class,
                                                  const std::string& where, std::string* error);

}  // namespace roce
