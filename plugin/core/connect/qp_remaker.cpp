// Recovery epochs' QPs: see qp_remaker.h.
#include "core/connect/qp_remaker.h"

#include <fmt/format.h>

#include "net/handshake.h"

namespace roce {

QpRemaker make_qp_remaker(QpRemakerLinks links) {
  auto shared = std::make_shared<const QpRemakerLinks>(std::move(links));
  QpRemaker remaker;
  remaker.create = [shared](int member) {
    const auto m = static_cast<size_t>(member);
    return create_data_qp(*shared->members.at(m), shared->cqs.at(m), shared->recv_depth,
                          shared->inline_data);
  };
  remaker.connect = [shared](verbs::QueuePair& qp, int member, uint32_t peer_qpn, uint32_t peer_psn,
                             uint32_t local_psn) {
    const auto m = static_cast<size_t>(member);
    QpLink link = shared->links.at(m);
    link.peer_qpn = peer_qpn;
    link.peer_psn = peer_psn;
    link.local_psn = local_psn;
    link.ece.reset();  // the epoch's QPs set no ECE: docs/design.md, "Recovery epochs"
    connect_qp(qp, *shared->members.at(m), link);
  };
  return remaker;
}

RecoverySetup make_recovery_setup(const ConnectionSettings& settings, uint32_t peer_version,
                                  bool watched, uint64_t nonce, QpRemakerLinks links) {
  RecoverySetup setup;
  setup.timeout_s = settings.recovery_timeout_s;
  setup.nonce = nonce;
  if (!settings.failover) {
    setup.off_reason = "NCCL_ROCE_FAILOVER=0";
  } else if (!watched) {
    setup.off_reason =
        "the peer watch is off (NCCL_ROCE_PEER_WATCH=0 on either end), and recovery epochs "
        "travel on its connection";
  } else if (peer_version < kFirstRecoveryVersion) {
    setup.off_reason = fmt::format(
        "the peer runs nccl-net-roce {}, which has no recovery epochs (from {} on); run the same "
        "plugin version on every node",
        net::plugin_version_text(peer_version), net::plugin_version_text(kFirstRecoveryVersion));
  } else {
    setup.enabled = true;
    setup.remaker = make_qp_remaker(std::move(links));
  }
  return setup;
}

}  // namespace roce
