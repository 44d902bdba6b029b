// The attributes of each RC queue-pair transition, with the checks a ConnectX port applies, done
// up front so a bad value is reported by name ("timeout 40 is out of range 0..31") instead of an
// anonymous EINVAL from ibv_modify_qp. Pure: no verbs calls, unit-tested without a device.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>

#include "roce/result.h"

namespace roce::verbs {

// PSNs and QP numbers are 24-bit on the wire.
inline constexpr uint32_t kMax24Bit = (1u << 24) - 1;

// RESET -> INIT.
struct InitAttributes {
  uint16_t pkey_index = 0;  // NCCL_IB_PKEY
  uint8_t port = 1;
  unsigned access_flags = 0;  // IBV_ACCESS_REMOTE_WRITE / _READ / _ATOMIC / LOCAL_WRITE
};

// INIT -> RTR. RoCE always carries a GRH: the GID pair, hop limit and traffic class become the
// IP header of every packet (flow_label is always 0).
struct RtrAttributes {
  ibv_gid dgid{};             // the peer's GID
  uint8_t sgid_index = 0;     // our GID table index
  uint8_t hop_limit = 255;    // IP TTL
  uint8_t traffic_class = 0;  // IP TOS: DSCP << 2 | ECN
  uint8_t service_level = 0;  // SL (VLAN priority on RoCE)
  ibv_mtu path_mtu = IBV_MTU_1024;
  uint32_t dest_qpn = 0;
  uint32_t rq_psn = 0;
  uint8_t max_dest_rd_atomic = 1;
  uint8_t min_rnr_timer = 12;  // IB timer code (12 = 0.64 ms)
};

// RTR -> RTS.
struct RtsAttributes {
  uint8_t timeout = 20;   // 4.096 us * 2^timeout; NCCL_IB_TIMEOUT
  uint8_t retry_cnt = 7;  // NCCL_IB_RETRY_CNT
  uint8_t rnr_retry = 7;  // 7 = retry forever
  uint32_t sq_psn = 0;
  uint8_t max_rd_atomic = 1;
};

// What the device allows, from ibv_device_attr.
struct DeviceLimits {
  int phys_port_cnt = 1;
  int max_qp_rd_atom = 16;
  int max_qp_init_rd_atom = 16;
  int max_pkeys = 1;
};
DeviceLimits limits_of(const ibv_device_attr& attr) noexcept;

// Each succeeds when the attributes are acceptable, else fails with one line naming the
// attribute, its value and the accepted range.
Status check(const InitAttributes& attrs, const DeviceLimits& limits);
Status check(const RtrAttributes& attrs, const DeviceLimits& limits);
Status check(const RtsAttributes& attrs, const DeviceLimits& limits);

// "pkey_index 0, port 1, access 0x6" etc., for error messages.
std::string describe(const InitAttributes& attrs);
std::string describe(const RtrAttributes& attrs);
std::string describe(const RtsAttributes& attrs);

// "1024" for IBV_MTU_1024; 0 bytes for a value that is not an ibv_mtu.
int mtu_bytes(ibv_mtu mtu) noexcept;
bool is_valid_mtu(int mtu) noexcept;
const char* qp_state_name(ibv_qp_state state) noexcept;  // "RESET", "INIT", "RTR", ...
// "::ffff:10.0.0.1" / "fe80::1".
std::string gid_text(const ibv_gid& gid);

}  // namespace roce::verbs
