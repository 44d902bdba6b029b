// The *_str helpers. Each text names the value as the InfiniBand Architecture Specification
// does (completion and event names in lower case, port states as their enum names), which is
// also what rdma-core's texts mean, so logs read the same on vroce as on a real NIC.
#include <infiniband/verbs.h>

#include <cstddef>

#include "abi/export.h"

namespace {

template <typename Enum, size_t N>
const char* lookup(const char* const (&names)[N], Enum value, const char* fallback) {
  auto index = static_cast<long>(value);
  if (index < 0 || static_cast<size_t>(index) >= N || names[index] == nullptr) {
    return fallback;
  }
  return names[index];
}

}  // namespace

VROCE_EXPORT const char* ibv_node_type_str(ibv_node_type node_type) {
  static const char* const kNames[] = {
      nullptr,                       // 0 is not a node type
      "InfiniBand channel adapter",  // IBV_NODE_CA
      "InfiniBand switch",
      "InfiniBand router",
      "iWARP NIC",
      "usNIC",
      "usNIC UDP",
      "unspecified",
  };
  return lookup(kNames, node_type, "unknown");
}

VROCE_EXPORT const char* ibv_port_state_str(ibv_port_state port_state) {
  static const char* const kNames[] = {
      "PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER",
  };
  return lookup(kNames, port_state, "invalid state");
}

VROCE_EXPORT const char* ibv_event_type_str(ibv_event_type event) {
  static const char* const kNames[] = {
      "CQ error",                                 // IBV_EVENT_CQ_ERR
      "local work queue catastrophic error",      // QP_FATAL
      "invalid request local work queue error",   // QP_REQ_ERR
      "local access violation work queue error",  // QP_ACCESS_ERR
      "communication established",                // COMM_EST
      "send queue drained",                       // SQ_DRAINED
      "path migrated",                            // PATH_MIG
      "path migration request error",             // PATH_MIG_ERR
      "local catastrophic error",                 // DEVICE_FATAL
      "port active",                              // PORT_ACTIVE
      "port error",                               // PORT_ERR
      "LID change",                               // LID_CHANGE
      "P_Key change",                             // PKEY_CHANGE
      "SM change",                                // SM_CHANGE
      "SRQ catastrophic error",                   // SRQ_ERR
      "SRQ limit reached",                        // SRQ_LIMIT_REACHED
      "last WQE reached",                         // QP_LAST_WQE_REACHED
      "client reregistration",                    // CLIENT_REREGISTER
      "GID table change",                         // GID_CHANGE
      "WQ fatal",                                 // WQ_FATAL
  };
  return lookup(kNames, event, "unknown");
}

VROCE_EXPORT const char* ibv_wc_status_str(ibv_wc_status status) {
  static const char* const kNames[] = {
      "success",                             // IBV_WC_SUCCESS
      "local length error",                  // LOC_LEN_ERR
      "local QP operation error",            // LOC_QP_OP_ERR
      "local EE context operation error",    // LOC_EEC_OP_ERR
      "local protection error",              // LOC_PROT_ERR
      "work request flushed error",          // WR_FLUSH_ERR
      "memory window bind error",            // MW_BIND_ERR
      "bad response error",                  // BAD_RESP_ERR
      "local access error",                  // LOC_ACCESS_ERR
      "remote invalid request error",        // REM_INV_REQ_ERR
      "remote access error",                 // REM_ACCESS_ERR
      "remote operation error",              // REM_OP_ERR
      "transport retry counter exceeded",    // RETRY_EXC_ERR
      "RNR retry counter exceeded",          // RNR_RETRY_EXC_ERR
      "local RDD violation error",           // LOC_RDD_VIOL_ERR
      "remote invalid RD request",           // REM_INV_RD_REQ_ERR
      "remote aborted error",                // REM_ABORT_ERR
      "invalid EE context number",           // INV_EECN_ERR
      "invalid EE context state",            // INV_EEC_STATE_ERR
      "fatal error",                         // FATAL_ERR
      "response timeout error",              // RESP_TIMEOUT_ERR
      "general error",                       // GENERAL_ERR
      "tag matching error",                  // TM_ERR
      "tag matching rendezvous incomplete",  // TM_RNDV_INCOMPLETE
  };
  return lookup(kNames, status, "unknown");
}
