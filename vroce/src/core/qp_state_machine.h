// The RC queue-pair state machine as a ConnectX-class NIC enforces it: which transitions exist,
// which attribute-mask bits each one requires and allows, and the value checks a RoCE port
// applies (GRH mandatory, a RoCEv2 source GID, MTU, timer and retry bounds, rd_atomic limits).
// Pure functions over plain values, so every rule is unit-tested without a device; ibv_modify_qp
// calls check_modify_qp() and then apply_modify_qp() only when it returned 0.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <span>
#include <string>

#include "device/device.h"

namespace vroce::core {

// Mask bits of one transition, apart from IBV_QP_STATE (always allowed).
struct TransitionRule {
  bool valid = false;
  int required = 0;
  int optional = 0;
};

// The rule for an RC QP moving from `from` to `to` (the kernel's qp_state_table for RC).
TransitionRule rc_transition_rule(ibv_qp_state from, ibv_qp_state to) noexcept;

// What a modify is checked against: the port and device limits and the GID table.
struct PortLimits {
  ibv_mtu active_mtu = IBV_MTU_1024;
  uint8_t max_qp_rd_atom = 16;       // bound on max_dest_rd_atomic (responder resources)
  uint8_t max_qp_init_rd_atom = 16;  // bound on max_rd_atomic (initiator depth)
  uint16_t pkey_tbl_len = 1;
  uint8_t phys_port_cnt = 1;
  std::span<const device::GidEntry> gids;
  ibv_gid source_gid{};  // the GID of the address the device sends from (its bound address)
};

// Checks one ibv_modify_qp call on an RC QP whose current state is `current`. Returns 0 when the
// call is legal, otherwise EINVAL with *why naming the violated rule and how to fix it. Does not
// check that the destination GID is reachable (that needs a route lookup; see qp.cpp).
int check_modify_qp(ibv_qp_state current, const ibv_qp_attr& attr, int mask,
                    const PortLimits& limits, std::string* why);

// Copies the attributes named by `mask` from `attr` into `stored` (the QP's current attribute
// set, as ibv_query_qp reports it); PSNs and QPNs are masked to 24 bits.
void apply_modify_qp(ibv_qp_attr& stored, const ibv_qp_attr& attr, int mask) noexcept;

// "RESET", "INIT", ... for log lines.
const char* qp_state_name(ibv_qp_state state) noexcept;

// Names of the bits set in an attribute mask, "AV|PATH_MTU|...", for log lines.
std::string qp_mask_names(int mask);

}  // namespace vroce::core
