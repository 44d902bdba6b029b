// Transition attribute checks and descriptions: see qp_attributes.h.
#include "verbs/qp_attributes.h"

#include <arpa/inet.h>
#include <fmt/format.h>

namespace roce::verbs {
namespace {

constexpr unsigned kSupportedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

bool is_zero(const ibv_gid& gid) noexcept {
  for (uint8_t byte : gid.raw) {
    if (byte != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

DeviceLimits limits_of(const ibv_device_attr& attr) noexcept {
  DeviceLimits limits;
  limits.phys_port_cnt = attr.phys_port_cnt;
  limits.max_qp_rd_atom = attr.max_qp_rd_atom;
  limits.max_qp_init_rd_atom = attr.max_qp_init_rd_atom;
  limits.max_pkeys = attr.max_pkeys;
  return limits;
}

Status check(const InitAttributes& attrs, const DeviceLimits& limits) {
  if (attrs.port < 1 || attrs.port > limits.phys_port_cnt) {
    return failure(fmt::format("port {} does not exist (the device has ports 1..{})", attrs.port,
                               limits.phys_port_cnt));
  }
  if (limits.max_pkeys > 0 && attrs.pkey_index >= limits.max_pkeys) {
    return failure(fmt::format("pkey_index {} is out of range 0..{} (NCCL_IB_PKEY)",
                               attrs.pkey_index, limits.max_pkeys - 1));
  }
  if ((attrs.access_flags & ~kSupportedAccess) != 0) {
    return failure(
        fmt::format("access flags 0x{:x} include bits other than local write, remote "
                    "write, remote read and remote atomic (0x{:x})",
                    attrs.access_flags, kSupportedAccess));
  }
  return {};
}

Status check(const RtrAttributes& attrs, const DeviceLimits& limits) {
  if (!is_valid_mtu(attrs.path_mtu)) {
    return failure(fmt::format("path_mtu {} is not an ibv_mtu (1=256 .. 5=4096)",
                               static_cast<int>(attrs.path_mtu)));
  }
  if (attrs.dest_qpn == 0 || attrs.dest_qpn > kMax24Bit) {
    return failure(fmt::format("dest_qpn 0x{:x} is not a QP number (1..0xffffff)", attrs.dest_qpn));
  }
  if (attrs.rq_psn > kMax24Bit) {
    return failure(fmt::format("rq_psn 0x{:x} does not fit 24 bits", attrs.rq_psn));
  }
  if (attrs.min_rnr_timer > 31) {
    return failure(fmt::format("min_rnr_timer {} is out of range 0..31", attrs.min_rnr_timer));
  }
  if (attrs.max_dest_rd_atomic > limits.max_qp_rd_atom) {
    return failure(fmt::format("max_dest_rd_atomic {} exceeds the device's max_qp_rd_atom {}",
                               attrs.max_dest_rd_atomic, limits.max_qp_rd_atom));
  }
  if (attrs.hop_limit == 0) {
    return failure("hop_limit 0 would make every packet expire at the first router; use 1..255");
  }
  if (attrs.service_level > 15) {
    return failure(
        fmt::format("service_level {} is out of range 0..15 (NCCL_IB_SL)", attrs.service_level));
  }
  if (is_zero(attrs.dgid)) {
    return failure("dgid is all zeros: the peer sent no usable GID");
  }
  return {};
}

Status check(const RtsAttributes& attrs, const DeviceLimits& limits) {
  if (attrs.timeout > 31) {
    return failure(
        fmt::format("timeout {} is out of range 0..31 (NCCL_IB_TIMEOUT)", attrs.timeout));
  }
  if (attrs.retry_cnt > 7) {
    return failure(
        fmt::format("retry_cnt {} is out of range 0..7 (NCCL_IB_RETRY_CNT)", attrs.retry_cnt));
  }
  if (attrs.rnr_retry > 7) {
    return failure(fmt::format("rnr_retry {} is out of range 0..7", attrs.rnr_retry));
  }
  if (attrs.sq_psn > kMax24Bit) {
    return failure(fmt::format("sq_psn 0x{:x} does not fit 24 bits", attrs.sq_psn));
  }
  if (attrs.max_rd_atomic > limits.max_qp_init_rd_atom) {
    return failure(fmt::format("max_rd_atomic {} exceeds the device's max_qp_init_rd_atom {}",
                               attrs.max_rd_atomic, limits.max_qp_init_rd_atom));
  }
  return {};
}

std::string describe(const InitAttributes& attrs) {
  return fmt::format("pkey_index {}, port {}, access 0x{:x}", attrs.pkey_index, attrs.port,
                     attrs.access_flags);
}

std::string describe(const RtrAttributes& attrs) {
  return fmt::format(
      "dgid {}, sgid_index {}, hop_limit {}, traffic_class {}, sl {}, path_mtu {}, dest_qpn "
      "0x{:x}, rq_psn 0x{:x}, max_dest_rd_atomic {}, min_rnr_timer {}",
      gid_text(attrs.dgid), attrs.sgid_index, attrs.hop_limit, attrs.traffic_class,
      attrs.service_level, mtu_bytes(attrs.path_mtu), attrs.dest_qpn, attrs.rq_psn,
      attrs.max_dest_rd_atomic, attrs.min_rnr_timer);
}

std::string describe(const RtsAttributes& attrs) {
  return fmt::format("timeout {}, retry_cnt {}, rnr_retry {}, sq_psn 0x{:x}, max_rd_atomic {}",
                     attrs.timeout, attrs.retry_cnt, attrs.rnr_retry, attrs.sq_psn,
                     attrs.max_rd_atomic);
}

int mtu_bytes(ibv_mtu mtu) noexcept {
  switch (mtu) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

bool is_valid_mtu(int mtu) noexcept {
  return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096;
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
      break;
  }
  return "UNKNOWN";
}

std::string gid_text(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET6, gid.raw, text, sizeof(text)) == nullptr) {
    return "(unprintable gid)";
  }
  return text;
}

}  // namespace roce::verbs
