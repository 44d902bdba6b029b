// How the two ends of a connection settle the traffic class and service level they run on.
// Pure: unit-tested without a device.
//
// The handshake carries each side's class and SL, not whether they were configured, so the
// receiver decides: when its own class is configured (NCCL_ROCE_TC, NCCL_ROCE_DSCP, NCCL_IB_TC,
// or a v11 communicator's class) the sender's must be equal, else the connection is refused with
// both values named; when it is not configured (v8/v9/v10 listen has no communicator class) it
// adopts the sender's. The reply carries the class the receiver applies, and the sender refuses a
// reply whose class differs from its own configured one. SL (NCCL_IB_SL) follows the same rule.
// A host-wide override that would rewrite the class (mlx5's tc/<port>/traffic_class) is an error
// when the class was configured, and otherwise is the class the side runs on (QP read-back would
// see it anyway), which is what the side then advertises.
#pragma once

#include <optional>
#include <string>

#include "roce/result.h"

namespace roce {

struct ClassOffer {
  int traffic_class = 0;
  bool configured = false;  // false: the default, willing to adopt the peer's
  int service_level = 0;
  bool sl_configured = false;
  std::string source;  // "NCCL_ROCE_TC", "communicator trafficClass", "default"
};

struct ClassAgreement {
  int traffic_class = 0;
  int service_level = 0;
  bool configured = false;  // a configured class is in force: running on another is an error
};

// The receiver's decision on a ConnectRequest carrying the sender's class and SL.
Result<ClassAgreement> receiver_agree(const ClassOffer& receiver, int sender_class, int sender_sl);

// The sender's check of the class and SL the receiver says it applies.
Result<ClassAgreement> sender_accept(const ClassOffer& sender, int receiver_class, int receiver_sl);

// Applies this host's override (nullopt: none) to an agreement or an offer. `where` names the
// file. The override becomes the class in force when nothing was configured.
Result<ClassAgreement> apply_host_override(const ClassAgreement& agreed,
                                           std::optional<int> override_class,
                                           const std::string& where);

}  // namespace roce
