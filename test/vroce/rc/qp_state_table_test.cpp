// The RC QP state machine, transition by transition: every legal transition with exactly its
// required bits, each optional bit added, each required bit removed, each foreign bit added; every
// illegal transition; and each attribute value a RoCE port refuses. The QP-level test (objects)
// checks that a refused modify leaves the QP unchanged.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "core/qp_state_machine.h"

namespace {

using vroce::core::check_modify_qp;
using vroce::core::PortLimits;
using vroce::core::rc_transition_rule;
using vroce::device::GidEntry;

constexpr int kAllBits[] = {
    IBV_QP_CUR_STATE,
    IBV_QP_EN_SQD_ASYNC_NOTIFY,
    IBV_QP_ACCESS_FLAGS,
    IBV_QP_PKEY_INDEX,
    IBV_QP_PORT,
    IBV_QP_QKEY,
    IBV_QP_AV,
    IBV_QP_PATH_MTU,
    IBV_QP_TIMEOUT,
    IBV_QP_RETRY_CNT,
    IBV_QP_RNR_RETRY,
    IBV_QP_RQ_PSN,
    IBV_QP_MAX_QP_RD_ATOMIC,
    IBV_QP_ALT_PATH,
    IBV_QP_MIN_RNR_TIMER,
    IBV_QP_SQ_PSN,
    IBV_QP_MAX_DEST_RD_ATOMIC,
    IBV_QP_PATH_MIG_STATE,
    IBV_QP_CAP,
    IBV_QP_DEST_QPN,
    IBV_QP_RATE_LIMIT,
};

constexpr ibv_qp_state kStates[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
                                    IBV_QPS_SQD,   IBV_QPS_SQE,  IBV_QPS_ERR};

ibv_gid mapped(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  ibv_gid gid{};
  gid.raw[10] = 0xff;
  gid.raw[11] = 0xff;
  gid.raw[12] = a;
  gid.raw[13] = b;
  gid.raw[14] = c;
  gid.raw[15] = d;
  return gid;
}

// An mlx5-like table: link-local v1/v2, then 127.0.3.1 as v1/v2 at 2/3, and an empty slot 4.
struct Fixture {
  std::vector<GidEntry> gids;
  PortLimits limits;

  Fixture() {
    GidEntry ll{};
    ll.gid.raw[0] = 0xfe;
    ll.gid.raw[1] = 0x80;
    ll.gid.raw[15] = 1;
    ll.valid = true;
    ll.type = IBV_GID_TYPE_ROCE_V1;
    gids.push_back(ll);
    ll.type = IBV_GID_TYPE_ROCE_V2;
    gids.push_back(ll);
    GidEntry v4{};
    v4.gid = mapped(127, 0, 3, 1);
    v4.valid = true;
    v4.type = IBV_GID_TYPE_ROCE_V1;
    gids.push_back(v4);
    v4.type = IBV_GID_TYPE_ROCE_V2;
    gids.push_back(v4);
    gids.push_back(GidEntry{});
    limits.active_mtu = IBV_MTU_4096;
    limits.max_qp_rd_atom = 16;
    limits.max_qp_init_rd_atom = 16;
    limits.pkey_tbl_len = 1;
    limits.phys_port_cnt = 1;
    limits.gids = gids;
    limits.source_gid = mapped(127, 0, 3, 1);
  }
};

// Values that are legal for every bit, so only the mask decides.
ibv_qp_attr good_attr(ibv_qp_state to, ibv_qp_state from) {
  ibv_qp_attr attr{};
  attr.qp_state = to;
  attr.cur_qp_state = from;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  attr.pkey_index = 0;
  attr.port_num = 1;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.port_num = 1;
  attr.ah_attr.grh.sgid_index = 3;
  attr.ah_attr.grh.dgid = mapped(127, 0, 3, 2);
  attr.ah_attr.grh.hop_limit = 64;
  attr.ah_attr.grh.traffic_class = 106;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = 0x1234;
  attr.rq_psn = 7;
  attr.sq_psn = 7;
  attr.max_dest_rd_atomic = 4;
  attr.max_rd_atomic = 4;
  attr.min_rnr_timer = 12;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.path_mig_state = IBV_MIG_MIGRATED;
  return attr;
}

bool legal(ibv_qp_state from, ibv_qp_state to) {
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
    return true;
  }
  switch (from) {
    case IBV_QPS_RESET:
      return to == IBV_QPS_INIT;
    case IBV_QPS_INIT:
      return to == IBV_QPS_INIT || to == IBV_QPS_RTR;
    case IBV_QPS_RTR:
      return to == IBV_QPS_RTS;
    case IBV_QPS_RTS:
      return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
    case IBV_QPS_SQD:
      return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
    case IBV_QPS_SQE:
      return to == IBV_QPS_RTS;
    default:
      return false;
  }
}

// Bits the value checks refuse on RoCE whatever the transition says.
bool refused_on_roce(int bit) {
  return bit == IBV_QP_ALT_PATH;
}

}  // namespace

TEST_CASE("only the RC transitions of the kernel table are valid", "[qp_state]") {
  Fixture f;
  for (ibv_qp_state from : kStates) {
    for (ibv_qp_state to : kStates) {
      CAPTURE(vroce::core::qp_state_name(from), vroce::core::qp_state_name(to));
      auto rule = rc_transition_rule(from, to);
      CHECK(rule.valid == legal(from, to));
      ibv_qp_attr attr = good_attr(to, from);
      std::string why;
      int rc = check_modify_qp(from, attr, IBV_QP_STATE | rule.required, f.limits, &why);
      if (legal(from, to)) {
        CHECK(rc == 0);
        CHECK(why.empty());
      } else {
        CHECK(rc == EINVAL);
        CHECK(why.find("cannot go from") != std::string::npos);
      }
    }
  }
}

TEST_CASE("the required masks are those of the reference table", "[qp_state]") {
  CHECK(rc_transition_rule(IBV_QPS_RESET, IBV_QPS_INIT).required ==
        (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
  CHECK(rc_transition_rule(IBV_QPS_INIT, IBV_QPS_INIT).required == 0);
  CHECK(rc_transition_rule(IBV_QPS_INIT, IBV_QPS_INIT).optional ==
        (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
  CHECK(rc_transition_rule(IBV_QPS_INIT, IBV_QPS_RTR).required ==
        (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
         IBV_QP_MIN_RNR_TIMER));
  CHECK(rc_transition_rule(IBV_QPS_INIT, IBV_QPS_RTR).optional ==
        (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX));
  CHECK(rc_transition_rule(IBV_QPS_RTR, IBV_QPS_RTS).required ==
        (IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
         IBV_QP_MAX_QP_RD_ATOMIC));
  CHECK(rc_transition_rule(IBV_QPS_RTR, IBV_QPS_RTS).optional ==
        (IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
         IBV_QP_PATH_MIG_STATE));
  CHECK(rc_transition_rule(IBV_QPS_RTS, IBV_QPS_RTS).required == 0);
  CHECK(rc_transition_rule(IBV_QPS_RTS, IBV_QPS_RTS).optional ==
        (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
         IBV_QP_MIN_RNR_TIMER));
  CHECK(rc_transition_rule(IBV_QPS_RTS, IBV_QPS_SQD).optional == IBV_QP_EN_SQD_ASYNC_NOTIFY);
  CHECK(rc_transition_rule(IBV_QPS_ERR, IBV_QPS_RESET).required == 0);
  CHECK(rc_transition_rule(IBV_QPS_RTS, IBV_QPS_ERR).optional == 0);
}

TEST_CASE("each legal transition: required bits missing, optional bits added, foreign bits",
          "[qp_state]") {
  Fixture f;
  for (ibv_qp_state from : kStates) {
    for (ibv_qp_state to : kStates) {
      auto rule = rc_transition_rule(from, to);
      if (!rule.valid) {
        continue;
      }
      ibv_qp_attr attr = good_attr(to, from);
      int base = IBV_QP_STATE | rule.required;
      for (int bit : kAllBits) {
        CAPTURE(vroce::core::qp_state_name(from), vroce::core::qp_state_name(to),
                vroce::core::qp_mask_names(bit));
        std::string why;
        if ((rule.required & bit) != 0) {
          CHECK(check_modify_qp(from, attr, base & ~bit, f.limits, &why) == EINVAL);
          CHECK(why.find("requires") != std::string::npos);
        } else if ((rule.optional & bit) != 0) {
          int rc = check_modify_qp(from, attr, base | bit, f.limits, &why);
          CHECK(rc == (refused_on_roce(bit) ? EINVAL : 0));
        } else {
          CHECK(check_modify_qp(from, attr, base | bit, f.limits, &why) == EINVAL);
          bool named = why.find("does not accept") != std::string::npos ||
                       why.find("CUR_STATE") != std::string::npos;
          CHECK(named);
        }
      }
    }
  }
}

TEST_CASE("a modify without IBV_QP_STATE keeps the state and follows the same table",
          "[qp_state]") {
  Fixture f;
  ibv_qp_attr attr = good_attr(IBV_QPS_INIT, IBV_QPS_INIT);
  // INIT->INIT with only optional bits.
  CHECK(check_modify_qp(IBV_QPS_INIT, attr, IBV_QP_ACCESS_FLAGS, f.limits, nullptr) == 0);
  // RTS->RTS with MIN_RNR_TIMER.
  CHECK(check_modify_qp(IBV_QPS_RTS, attr, IBV_QP_MIN_RNR_TIMER, f.limits, nullptr) == 0);
  // RTR->RTR does not exist.
  CHECK(check_modify_qp(IBV_QPS_RTR, attr, IBV_QP_MIN_RNR_TIMER, f.limits, nullptr) == EINVAL);
  // RESET->RESET with nothing is accepted, with anything else it is not.
  CHECK(check_modify_qp(IBV_QPS_RESET, attr, 0, f.limits, nullptr) == 0);
  CHECK(check_modify_qp(IBV_QPS_RESET, attr, IBV_QP_PORT, f.limits, nullptr) == EINVAL);
}

TEST_CASE("IBV_QP_CUR_STATE is accepted only from RTR, RTS, SQD, SQE and must be true",
          "[qp_state]") {
  Fixture f;
  ibv_qp_attr attr = good_attr(IBV_QPS_RTS, IBV_QPS_RTS);
  std::string why;
  CHECK(check_modify_qp(IBV_QPS_RTS, attr, IBV_QP_STATE | IBV_QP_CUR_STATE, f.limits, &why) == 0);
  attr.cur_qp_state = IBV_QPS_SQD;
  CHECK(check_modify_qp(IBV_QPS_RTS, attr, IBV_QP_STATE | IBV_QP_CUR_STATE, f.limits, &why) ==
        EINVAL);
  CHECK(why.find("cur_qp_state says SQD") != std::string::npos);
  attr = good_attr(IBV_QPS_ERR, IBV_QPS_INIT);
  CHECK(check_modify_qp(IBV_QPS_INIT, attr, IBV_QP_STATE | IBV_QP_CUR_STATE, f.limits, &why) ==
        EINVAL);
  CHECK(why.find("only accepted from") != std::string::npos);
}

TEST_CASE("value checks of a RoCE port refuse with EINVAL and a reason", "[qp_state]") {
  Fixture f;
  const int rtr = IBV_QP_STATE | rc_transition_rule(IBV_QPS_INIT, IBV_QPS_RTR).required;
  const int rts = IBV_QP_STATE | rc_transition_rule(IBV_QPS_RTR, IBV_QPS_RTS).required;
  const int init = IBV_QP_STATE | rc_transition_rule(IBV_QPS_RESET, IBV_QPS_INIT).required;

  struct Case {
    const char* name;
    ibv_qp_state from;
    ibv_qp_state to;
    int mask;
    void (*mutate)(ibv_qp_attr&, Fixture&);
    const char* expect;
  };
  const Case cases[] = {
      {"no GRH", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.ah_attr.is_global = 0; }, "requires one"},
      {"sgid index past the table", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.ah_attr.grh.sgid_index = 9; }, "names no GID"},
      {"empty sgid slot", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.ah_attr.grh.sgid_index = 4; }, "names no GID"},
      {"RoCEv1 sgid", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.ah_attr.grh.sgid_index = 2; }, "RoCEv1"},
      {"sgid not the bound address", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.ah_attr.grh.sgid_index = 1; }, "sends from"},
      {"zero dgid", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.ah_attr.grh.dgid = ibv_gid{}; }, "all zeros"},
      {"dgid of another family", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) {
         a.ah_attr.grh.dgid = ibv_gid{};
         a.ah_attr.grh.dgid.raw[0] = 0x20;
         a.ah_attr.grh.dgid.raw[15] = 1;
       },
       "families"},
      {"hop limit 0", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.ah_attr.grh.hop_limit = 0; }, "TTL 0"},
      {"ah port 0", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.ah_attr.port_num = 0; }, "ah_attr.port_num"},
      {"path mtu above active", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture& fx) {
         fx.limits.active_mtu = IBV_MTU_1024;
         a.path_mtu = IBV_MTU_2048;
       },
       "active_mtu"},
      {"path mtu not an enum", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.path_mtu = static_cast<ibv_mtu>(6); }, "ibv_mtu"},
      {"dest qpn over 24 bits", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.dest_qp_num = 0x1000000; }, "24 bits"},
      {"max_dest_rd_atomic over limit", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.max_dest_rd_atomic = 17; }, "max_qp_rd_atom"},
      {"min_rnr_timer over 31", IBV_QPS_INIT, IBV_QPS_RTR, rtr,
       [](ibv_qp_attr& a, Fixture&) { a.min_rnr_timer = 32; }, "min_rnr_timer"},
      {"alt path", IBV_QPS_INIT, IBV_QPS_RTR, rtr | IBV_QP_ALT_PATH, [](ibv_qp_attr&, Fixture&) {},
       "ALT_PATH"},
      {"timeout over 31", IBV_QPS_RTR, IBV_QPS_RTS, rts,
       [](ibv_qp_attr& a, Fixture&) { a.timeout = 32; }, "timeout"},
      {"retry_cnt over 7", IBV_QPS_RTR, IBV_QPS_RTS, rts,
       [](ibv_qp_attr& a, Fixture&) { a.retry_cnt = 8; }, "retry_cnt"},
      {"rnr_retry over 7", IBV_QPS_RTR, IBV_QPS_RTS, rts,
       [](ibv_qp_attr& a, Fixture&) { a.rnr_retry = 8; }, "rnr_retry"},
      {"max_rd_atomic over limit", IBV_QPS_RTR, IBV_QPS_RTS, rts,
       [](ibv_qp_attr& a, Fixture&) { a.max_rd_atomic = 200; }, "max_qp_init_rd_atom"},
      {"path mig armed", IBV_QPS_RTR, IBV_QPS_RTS, rts | IBV_QP_PATH_MIG_STATE,
       [](ibv_qp_attr& a, Fixture&) { a.path_mig_state = IBV_MIG_ARMED; }, "MIGRATED"},
      {"port 0", IBV_QPS_RESET, IBV_QPS_INIT, init,
       [](ibv_qp_attr& a, Fixture&) { a.port_num = 0; }, "port_num"},
      {"port 2", IBV_QPS_RESET, IBV_QPS_INIT, init,
       [](ibv_qp_attr& a, Fixture&) { a.port_num = 2; }, "port_num"},
      {"pkey index 1", IBV_QPS_RESET, IBV_QPS_INIT, init,
       [](ibv_qp_attr& a, Fixture&) { a.pkey_index = 1; }, "P_Key"},
      {"access flag MW_BIND", IBV_QPS_RESET, IBV_QPS_INIT, init,
       [](ibv_qp_attr& a, Fixture&) { a.qp_access_flags |= IBV_ACCESS_MW_BIND; }, "bits"},
      {"unknown mask bit", IBV_QPS_RESET, IBV_QPS_INIT, init | (1 << 21),
       [](ibv_qp_attr&, Fixture&) {}, "not ibv_qp_attr_mask"},
      {"state out of range", IBV_QPS_RESET, IBV_QPS_UNKNOWN, IBV_QP_STATE,
       [](ibv_qp_attr&, Fixture&) {}, "not a state"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Fixture fx;
    ibv_qp_attr attr = good_attr(c.to, c.from);
    // Sanity: the unmutated attributes pass (except where the mask itself is the fault).
    std::string why;
    c.mutate(attr, fx);
    CHECK(check_modify_qp(c.from, attr, c.mask, fx.limits, &why) == EINVAL);
    CHECK_THAT(why, Catch::Matchers::Contains(c.expect));
  }
  // And the boundary values are accepted.
  ibv_qp_attr attr = good_attr(IBV_QPS_RTS, IBV_QPS_RTR);
  attr.timeout = 31;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 16;
  CHECK(check_modify_qp(IBV_QPS_RTR, attr, rts, f.limits, nullptr) == 0);
  attr = good_attr(IBV_QPS_RTR, IBV_QPS_INIT);
  attr.path_mtu = IBV_MTU_4096;
  attr.min_rnr_timer = 31;
  attr.max_dest_rd_atomic = 16;
  CHECK(check_modify_qp(IBV_QPS_INIT, attr, rtr, f.limits, nullptr) == 0);
}

TEST_CASE("apply_modify_qp copies exactly the masked attributes", "[qp_state]") {
  ibv_qp_attr stored{};
  stored.qp_state = IBV_QPS_INIT;
  ibv_qp_attr attr = good_attr(IBV_QPS_RTR, IBV_QPS_INIT);
  attr.rq_psn = 0x12345678;
  attr.dest_qp_num = 0xABCDEF;
  vroce::core::apply_modify_qp(stored, attr, IBV_QP_STATE | IBV_QP_RQ_PSN | IBV_QP_DEST_QPN);
  CHECK(stored.qp_state == IBV_QPS_RTR);
  CHECK(stored.rq_psn == 0x345678);
  CHECK(stored.dest_qp_num == 0xABCDEF);
  CHECK(stored.path_mtu == 0);  // not in the mask
  CHECK(stored.ah_attr.is_global == 0);
  vroce::core::apply_modify_qp(stored, attr, IBV_QP_AV | IBV_QP_PATH_MTU);
  CHECK(stored.ah_attr.grh.traffic_class == 106);
  CHECK(stored.path_mtu == IBV_MTU_1024);
}

TEST_CASE("mask names for log lines", "[qp_state]") {
  CHECK(vroce::core::qp_mask_names(IBV_QP_AV | IBV_QP_PATH_MTU) == "AV|PATH_MTU");
  CHECK(vroce::core::qp_mask_names(0) == "none");
  CHECK(vroce::core::qp_mask_names(1 << 22) == "0x400000");
}
