#include "core/qp_state_machine.h"

#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace vroce::core {
namespace {

constexpr int kAllKnownBits =
    IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ACCESS_FLAGS |
    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT |
    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
    IBV_QP_ALT_PATH | IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
    IBV_QP_PATH_MIG_STATE | IBV_QP_CAP | IBV_QP_DEST_QPN | IBV_QP_RATE_LIMIT;

constexpr unsigned kQpAccessBits = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

constexpr size_t kNumStates = IBV_QPS_ERR + 1;

// The RC column of the kernel's qp_state_table (drivers/infiniband/core/verbs.c), which every
// RDMA device driver enforces before it touches hardware.
struct Table {
  std::array<std::array<TransitionRule, kNumStates>, kNumStates> rules{};

  constexpr Table() {
    for (size_t from = 0; from < kNumStates; ++from) {
      // Any state may go to RESET; any state except RESET may go to ERR (the kernel also lists
      // RESET->ERR as valid, and so do we).
      rules[from][IBV_QPS_RESET] = {true, 0, 0};
      rules[from][IBV_QPS_ERR] = {true, 0, 0};
    }
    rules[IBV_QPS_RESET][IBV_QPS_INIT] = {true,
                                          IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0};
    rules[IBV_QPS_INIT][IBV_QPS_INIT] = {true, 0,
                                         IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS};
    rules[IBV_QPS_INIT][IBV_QPS_RTR] = {true,
                                        IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                            IBV_QP_MIN_RNR_TIMER,
                                        IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
    rules[IBV_QPS_RTR][IBV_QPS_RTS] = {true,
                                       IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                                       IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                                           IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE};
    rules[IBV_QPS_RTS][IBV_QPS_RTS] = {true, 0,
                                       IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
                                           IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER};
    rules[IBV_QPS_RTS][IBV_QPS_SQD] = {true, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY};
    rules[IBV_QPS_SQD][IBV_QPS_RTS] = {true, 0,
                                       IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                                           IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE};
    rules[IBV_QPS_SQD][IBV_QPS_SQD] = {
        true, 0,
        IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
            IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH |
            IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE};
    // SQE exists for UD/UC only; the kernel still lists SQE->RTS as a valid entry with no
    // optional bits for RC, so an RC QP could take it if it were ever in SQE (it never is).
    rules[IBV_QPS_SQE][IBV_QPS_RTS] = {true, 0, IBV_QP_CUR_STATE};
  }
};

constexpr Table kTable{};

bool fail(std::string* why, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
bool fail(std::string* why, const char* fmt, ...) {
  if (why != nullptr) {
    char buf[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);
    *why = buf;
  }
  return false;
}

bool is_ipv4_mapped(const ibv_gid& gid) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, kPrefix, sizeof(kPrefix)) == 0;
}

bool is_zero(const ibv_gid& gid) {
  for (uint8_t byte : gid.raw) {
    if (byte != 0) {
      return false;
    }
  }
  return true;
}

std::string gid_text(const ibv_gid& gid) {
  char buf[48];
  std::snprintf(buf, sizeof(buf),
                "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
                gid.raw[0], gid.raw[1], gid.raw[2], gid.raw[3], gid.raw[4], gid.raw[5], gid.raw[6],
                gid.raw[7], gid.raw[8], gid.raw[9], gid.raw[10], gid.raw[11], gid.raw[12],
                gid.raw[13], gid.raw[14], gid.raw[15]);
  return buf;
}

// Index of the first valid RoCEv2 GID of the table, to name it in hints; -1 when none.
int first_v2_index(std::span<const device::GidEntry> gids) {
  for (size_t i = 0; i < gids.size(); ++i) {
    if (gids[i].valid && gids[i].type == IBV_GID_TYPE_ROCE_V2 && is_ipv4_mapped(gids[i].gid)) {
      return static_cast<int>(i);
    }
  }
  for (size_t i = 0; i < gids.size(); ++i) {
    if (gids[i].valid && gids[i].type == IBV_GID_TYPE_ROCE_V2) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool check_av(const ibv_ah_attr& ah, const PortLimits& limits, std::string* why) {
  if (ah.is_global == 0) {
    return fail(why,
                "the address vector has no GRH (ah_attr.is_global 0), but a RoCE port requires "
                "one (IBV_QPF_GRH_REQUIRED): set is_global 1 with grh.dgid and grh.sgid_index");
  }
  if (ah.port_num == 0 || ah.port_num > limits.phys_port_cnt) {
    return fail(why, "ah_attr.port_num %u is not a port of this device (ports 1..%u)", ah.port_num,
                limits.phys_port_cnt);
  }
  const ibv_global_route& grh = ah.grh;
  if (grh.sgid_index >= limits.gids.size() || !limits.gids[grh.sgid_index].valid) {
    return fail(why,
                "grh.sgid_index %u names no GID of this port (the table has %zu entries; "
                "RoCEv2 is at index %d): list them with ibv_devinfo -v",
                grh.sgid_index, limits.gids.size(), first_v2_index(limits.gids));
  }
  const device::GidEntry& sgid = limits.gids[grh.sgid_index];
  if (sgid.type != IBV_GID_TYPE_ROCE_V2) {
    return fail(why,
                "grh.sgid_index %u is a RoCEv1 GID; RoCEv1 frames are raw Ethernet (ethertype "
                "0x8915) and are not routable over UDP, so vroce cannot send them: use the "
                "RoCEv2 GID at index %d",
                grh.sgid_index, first_v2_index(limits.gids));
  }
  if (std::memcmp(sgid.gid.raw, limits.source_gid.raw, sizeof(ibv_gid)) != 0) {
    return fail(why,
                "grh.sgid_index %u (%s) is not the address this vroce device sends from (%s); "
                "use the RoCEv2 GID of that address (index %d)",
                grh.sgid_index, gid_text(sgid.gid).c_str(), gid_text(limits.source_gid).c_str(),
                first_v2_index(limits.gids));
  }
  if (is_zero(grh.dgid)) {
    return fail(why, "grh.dgid is all zeros: set it to the remote port's RoCEv2 GID");
  }
  if (is_ipv4_mapped(grh.dgid) != is_ipv4_mapped(sgid.gid)) {
    return fail(why,
                "grh.dgid %s and the source GID %s are of different IP families; pick GIDs of "
                "the same family on both sides",
                gid_text(grh.dgid).c_str(), gid_text(sgid.gid).c_str());
  }
  if (grh.hop_limit == 0) {
    return fail(why,
                "grh.hop_limit 0 would send every packet with TTL 0, which no router forwards: "
                "use 64 or 255");
  }
  if (grh.flow_label > 0xFFFFF) {
    return fail(why, "grh.flow_label 0x%x exceeds 20 bits", grh.flow_label);
  }
  return true;
}

bool check_values(const ibv_qp_attr& attr, int mask, const PortLimits& limits, std::string* why) {
  if ((mask & IBV_QP_PORT) != 0 && (attr.port_num == 0 || attr.port_num > limits.phys_port_cnt)) {
    return fail(why, "port_num %u is not a port of this device (ports 1..%u)", attr.port_num,
                limits.phys_port_cnt);
  }
  if ((mask & IBV_QP_PKEY_INDEX) != 0 && attr.pkey_index >= limits.pkey_tbl_len) {
    return fail(why, "pkey_index %u is outside the P_Key table (%u entries): use 0",
                attr.pkey_index, limits.pkey_tbl_len);
  }
  if ((mask & IBV_QP_ACCESS_FLAGS) != 0 && (attr.qp_access_flags & ~kQpAccessBits) != 0) {
    return fail(why,
                "qp_access_flags 0x%x has bits a QP does not take (allowed: LOCAL_WRITE, "
                "REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC)",
                attr.qp_access_flags);
  }
  if ((mask & IBV_QP_ALT_PATH) != 0) {
    return fail(why,
                "IBV_QP_ALT_PATH: alternate paths (automatic path migration) do not exist on "
                "RoCE; drop the bit");
  }
  if ((mask & IBV_QP_PATH_MIG_STATE) != 0 && attr.path_mig_state != IBV_MIG_MIGRATED) {
    return fail(why,
                "path_mig_state %d needs an alternate path, which RoCE does not have; use "
                "IBV_MIG_MIGRATED",
                static_cast<int>(attr.path_mig_state));
  }
  if ((mask & IBV_QP_AV) != 0 && !check_av(attr.ah_attr, limits, why)) {
    return false;
  }
  if ((mask & IBV_QP_PATH_MTU) != 0) {
    if (attr.path_mtu < IBV_MTU_256 || attr.path_mtu > IBV_MTU_4096) {
      return fail(why, "path_mtu %d is not an ibv_mtu value (1..5)",
                  static_cast<int>(attr.path_mtu));
    }
    if (attr.path_mtu > limits.active_mtu) {
      return fail(why,
                  "path_mtu %d (%d bytes) exceeds the port's active_mtu %d (%d bytes, from the "
                  "netdev MTU): use at most the active_mtu that ibv_query_port reports",
                  static_cast<int>(attr.path_mtu), 128 << attr.path_mtu,
                  static_cast<int>(limits.active_mtu), 128 << limits.active_mtu);
    }
  }
  if ((mask & IBV_QP_DEST_QPN) != 0 && attr.dest_qp_num > 0xFFFFFF) {
    return fail(why, "dest_qp_num 0x%x exceeds 24 bits", attr.dest_qp_num);
  }
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0 && attr.max_dest_rd_atomic > limits.max_qp_rd_atom) {
    return fail(why, "max_dest_rd_atomic %u exceeds the device's max_qp_rd_atom %u",
                attr.max_dest_rd_atomic, limits.max_qp_rd_atom);
  }
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0 && attr.max_rd_atomic > limits.max_qp_init_rd_atom) {
    return fail(why, "max_rd_atomic %u exceeds the device's max_qp_init_rd_atom %u",
                attr.max_rd_atomic, limits.max_qp_init_rd_atom);
  }
  if ((mask & IBV_QP_MIN_RNR_TIMER) != 0 && attr.min_rnr_timer > 31) {
    return fail(why, "min_rnr_timer %u is not a 5-bit RNR timer code (0..31)", attr.min_rnr_timer);
  }
  if ((mask & IBV_QP_TIMEOUT) != 0 && attr.timeout > 31) {
    return fail(why, "timeout %u exceeds 31 (the local ACK timeout is 4.096 us * 2^timeout)",
                attr.timeout);
  }
  if ((mask & IBV_QP_RETRY_CNT) != 0 && attr.retry_cnt > 7) {
    return fail(why, "retry_cnt %u exceeds 7 (a 3-bit field)", attr.retry_cnt);
  }
  if ((mask & IBV_QP_RNR_RETRY) != 0 && attr.rnr_retry > 7) {
    return fail(why, "rnr_retry %u exceeds 7 (a 3-bit field; 7 means retry forever)",
                attr.rnr_retry);
  }
  return true;
}

}  // namespace

TransitionRule rc_transition_rule(ibv_qp_state from, ibv_qp_state to) noexcept {
  if (from < IBV_QPS_RESET || from > IBV_QPS_ERR || to < IBV_QPS_RESET || to > IBV_QPS_ERR) {
    return {};
  }
  return kTable.rules[from][to];
}

int check_modify_qp(ibv_qp_state current, const ibv_qp_attr& attr, int mask,
                    const PortLimits& limits, std::string* why) {
  if ((mask & ~kAllKnownBits) != 0) {
    fail(why, "attr_mask 0x%x has bits that are not ibv_qp_attr_mask values", mask);
    return EINVAL;
  }
  ibv_qp_state from = current;
  if ((mask & IBV_QP_CUR_STATE) != 0) {
    if (current != IBV_QPS_RTR && current != IBV_QPS_RTS && current != IBV_QPS_SQD &&
        current != IBV_QPS_SQE) {
      fail(why, "IBV_QP_CUR_STATE is only accepted from RTR, RTS, SQD or SQE (the QP is in %s)",
           qp_state_name(current));
      return EINVAL;
    }
    if (attr.cur_qp_state != current) {
      fail(why, "cur_qp_state says %s but the QP is in %s", qp_state_name(attr.cur_qp_state),
           qp_state_name(current));
      return EINVAL;
    }
  }
  ibv_qp_state to = (mask & IBV_QP_STATE) != 0 ? attr.qp_state : from;
  if (to < IBV_QPS_RESET || to > IBV_QPS_ERR) {
    fail(why, "qp_state %d is not a state a QP can be moved to", static_cast<int>(to));
    return EINVAL;
  }
  TransitionRule rule = rc_transition_rule(from, to);
  if (!rule.valid) {
    fail(why, "an RC QP cannot go from %s to %s", qp_state_name(from), qp_state_name(to));
    return EINVAL;
  }
  if ((mask & rule.required) != rule.required) {
    fail(why, "%s->%s requires attr_mask bits %s; missing %s", qp_state_name(from),
         qp_state_name(to), qp_mask_names(rule.required).c_str(),
         qp_mask_names(rule.required & ~mask).c_str());
    return EINVAL;
  }
  int extra = mask & ~(rule.required | rule.optional | IBV_QP_STATE);
  if (extra != 0) {
    fail(why, "%s->%s does not accept attr_mask bits %s (optional here: %s)", qp_state_name(from),
         qp_state_name(to), qp_mask_names(extra).c_str(),
         rule.optional != 0 ? qp_mask_names(rule.optional).c_str() : "none");
    return EINVAL;
  }
  if (!check_values(attr, mask, limits, why)) {
    return EINVAL;
  }
  return 0;
}

void apply_modify_qp(ibv_qp_attr& stored, const ibv_qp_attr& attr, int mask) noexcept {
  if ((mask & IBV_QP_STATE) != 0) {
    stored.qp_state = attr.qp_state;
    stored.cur_qp_state = attr.qp_state;
  }
  if ((mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) != 0) {
    stored.en_sqd_async_notify = attr.en_sqd_async_notify;
  }
  if ((mask & IBV_QP_ACCESS_FLAGS) != 0) {
    stored.qp_access_flags = attr.qp_access_flags;
  }
  if ((mask & IBV_QP_PKEY_INDEX) != 0) {
    stored.pkey_index = attr.pkey_index;
  }
  if ((mask & IBV_QP_PORT) != 0) {
    stored.port_num = attr.port_num;
  }
  if ((mask & IBV_QP_AV) != 0) {
    stored.ah_attr = attr.ah_attr;
  }
  if ((mask & IBV_QP_PATH_MTU) != 0) {
    stored.path_mtu = attr.path_mtu;
  }
  if ((mask & IBV_QP_TIMEOUT) != 0) {
    stored.timeout = attr.timeout;
  }
  if ((mask & IBV_QP_RETRY_CNT) != 0) {
    stored.retry_cnt = attr.retry_cnt;
  }
  if ((mask & IBV_QP_RNR_RETRY) != 0) {
    stored.rnr_retry = attr.rnr_retry;
  }
  if ((mask & IBV_QP_RQ_PSN) != 0) {
    stored.rq_psn = attr.rq_psn & 0xFFFFFF;
  }
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
    stored.max_rd_atomic = attr.max_rd_atomic;
  }
  if ((mask & IBV_QP_MIN_RNR_TIMER) != 0) {
    stored.min_rnr_timer = attr.min_rnr_timer;
  }
  if ((mask & IBV_QP_SQ_PSN) != 0) {
    stored.sq_psn = attr.sq_psn & 0xFFFFFF;
  }
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0) {
    stored.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  }
  if ((mask & IBV_QP_PATH_MIG_STATE) != 0) {
    stored.path_mig_state = attr.path_mig_state;
  }
  if ((mask & IBV_QP_DEST_QPN) != 0) {
    stored.dest_qp_num = attr.dest_qp_num & 0xFFFFFF;
  }
}

const char* qp_state_name(ibv_qp_state state) noexcept {
  switch (state) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    case IBV_QPS_UNKNOWN:
      return "UNKNOWN";
  }
  return "INVALID";
}

std::string qp_mask_names(int mask) {
  static constexpr std::pair<int, const char*> kNames[] = {
      {IBV_QP_STATE, "STATE"},
      {IBV_QP_CUR_STATE, "CUR_STATE"},
      {IBV_QP_EN_SQD_ASYNC_NOTIFY, "EN_SQD_ASYNC_NOTIFY"},
      {IBV_QP_ACCESS_FLAGS, "ACCESS_FLAGS"},
      {IBV_QP_PKEY_INDEX, "PKEY_INDEX"},
      {IBV_QP_PORT, "PORT"},
      {IBV_QP_QKEY, "QKEY"},
      {IBV_QP_AV, "AV"},
      {IBV_QP_PATH_MTU, "PATH_MTU"},
      {IBV_QP_TIMEOUT, "TIMEOUT"},
      {IBV_QP_RETRY_CNT, "RETRY_CNT"},
      {IBV_QP_RNR_RETRY, "RNR_RETRY"},
      {IBV_QP_RQ_PSN, "RQ_PSN"},
      {IBV_QP_MAX_QP_RD_ATOMIC, "MAX_QP_RD_ATOMIC"},
      {IBV_QP_ALT_PATH, "ALT_PATH"},
      {IBV_QP_MIN_RNR_TIMER, "MIN_RNR_TIMER"},
      {IBV_QP_SQ_PSN, "SQ_PSN"},
      {IBV_QP_MAX_DEST_RD_ATOMIC, "MAX_DEST_RD_ATOMIC"},
      {IBV_QP_PATH_MIG_STATE, "PATH_MIG_STATE"},
      {IBV_QP_CAP, "CAP"},
      {IBV_QP_DEST_QPN, "DEST_QPN"},
      {IBV_QP_RATE_LIMIT, "RATE_LIMIT"},
  };
  std::string out;
  int rest = mask;
  for (const auto& [bit, name] : kNames) {
    if ((mask & bit) != 0) {
      if (!out.empty()) {
        out += '|';
      }
      out += name;
      rest &= ~bit;
    }
  }
  if (rest != 0) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "%s0x%x", out.empty() ? "" : "|", rest);
    out += buf;
  }
  return out.empty() ? "none" : out;
}

}  // namespace vroce::core
