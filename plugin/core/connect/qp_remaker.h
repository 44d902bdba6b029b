// What connection setup hands a comm for its recovery epochs (core/datapath/recovery_epoch.h):
// whether they run, and how to make a data QP again on each member with the link the handshake
// agreed (the peer's GID and MTU on that member, the class and SL, the timeouts).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/connect/connection_setup.h"
#include "core/connect/qp_setup.h"
#include "core/datapath/recovery_epoch.h"

namespace roce {

// The first plugin version whose comms speak the epoch frames: an older peer keeps today's
// behaviour (a failed QP fails the comm), said once when it matters.
inline constexpr uint32_t kFirstRecoveryVersion = 0x000200;  // 0.2.0

struct QpRemakerLinks {
  std::vector<std::shared_ptr<DeviceRuntime>> members;
  std::vector<std::shared_ptr<verbs::CompletionQueue>> cqs;  // per member
  std::vector<QpLink> links;  // per member: everything but the peer's QPN and both PSNs
  uint32_t recv_depth = 1;
  bool inline_data = true;
};

QpRemaker make_qp_remaker(QpRemakerLinks links);

// The recovery setup of a comm whose handshake ended with a peer of `peer_version`, watched or
// not (setup.peer_watch), under these settings.
RecoverySetup make_recovery_setup(const ConnectionSettings& settings, uint32_t peer_version,
                                  bool watched, uint64_t nonce, QpRemakerLinks links);

}  // namespace roce
