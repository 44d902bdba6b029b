// ECE negotiation on vroce QPs: see ece.h.
#include "core/ece.h"

#include <cerrno>
#include <mutex>

#include "config/config.h"
#include "core/qp.h"

namespace vroce::core {

int query_ece(ibv_qp* ibv, ibv_ece* ece) {
  if (ibv == nullptr || ece == nullptr) {
    return EINVAL;
  }
  const Config& cfg = config();
  if (!cfg.ece_enabled) {
    return EOPNOTSUPP;
  }
  Qp& qp = *to_qp(ibv);
  const ibv_qp_state state = qp.state.load(std::memory_order_relaxed);
  uint32_t options = cfg.ece_options;
  {
    std::lock_guard lock(qp.attr_mutex);
    if (qp.ece_set && state != IBV_QPS_RESET && state != IBV_QPS_INIT) {
      options &= qp.ece_requested;  // reduced at RTR to what both sides support
    }
  }
  ece->vendor_id = kEceVendorMellanox;
  ece->options = options;
  ece->comp_mask = 0;
  return 0;
}

int set_ece(ibv_qp* ibv, ibv_ece* ece) {
  if (ibv == nullptr || ece == nullptr) {
    return EINVAL;
  }
  if (!config().ece_enabled) {
    return EOPNOTSUPP;
  }
  if (ece->vendor_id != kEceVendorMellanox || ece->comp_mask != 0) {
    return EINVAL;  // as mlx5: another vendor's negotiation, or fields it does not know
  }
  Qp& qp = *to_qp(ibv);
  const ibv_qp_state state = qp.state.load(std::memory_order_relaxed);
  if (state != IBV_QPS_RESET && state != IBV_QPS_INIT) {
    return EINVAL;  // applied at RTR: too late once there
  }
  std::lock_guard lock(qp.attr_mutex);
  qp.ece_set = true;
  qp.ece_requested = ece->options;
  return 0;
}

}  // namespace vroce::core
