// The table behind completion_status_info(); values are libibverbs' enum ibv_wc_status.
#include "core/datapath/completion_status.h"

#include <infiniband/verbs.h>

namespace roce {

CompletionStatusInfo completion_status_info(int status) noexcept {
  switch (status) {
    case IBV_WC_SUCCESS:
      return {"IBV_WC_SUCCESS", ncclSuccess, ""};
    case IBV_WC_LOC_LEN_ERR:
      return {"IBV_WC_LOC_LEN_ERR", ncclSystemError,
              "a message exceeded the local receive buffer or the port's limits; a plugin bug, "
              "please report it with NCCL_DEBUG=INFO output"};
    case IBV_WC_LOC_QP_OP_ERR:
      return {"IBV_WC_LOC_QP_OP_ERR", ncclSystemError,
              "the local QP rejected a work request (inline size, SGE count or QP state)"};
    case IBV_WC_LOC_PROT_ERR:
      return {"IBV_WC_LOC_PROT_ERR", ncclSystemError,
              "a local buffer is outside its memory registration or was deregistered while in use"};
    case IBV_WC_WR_FLUSH_ERR:
      return {"IBV_WC_WR_FLUSH_ERR", ncclSystemError,
              "flushed because the QP had already failed; look for the first error on this "
              "connection"};
    case IBV_WC_LOC_ACCESS_ERR:
      return {"IBV_WC_LOC_ACCESS_ERR", ncclSystemError,
              "a local memory registration lacks the needed access rights"};
    case IBV_WC_BAD_RESP_ERR:
      return {"IBV_WC_BAD_RESP_ERR", ncclRemoteError,
              "the peer answered with an unexpected transport response; check both ends run "
              "compatible NICs and firmware"};
    case IBV_WC_REM_INV_REQ_ERR:
      return {"IBV_WC_REM_INV_REQ_ERR", ncclRemoteError,
              "the peer rejected the request as invalid (message longer than its buffer or an "
              "opcode it does not allow)"};
    case IBV_WC_REM_ACCESS_ERR:
      return {"IBV_WC_REM_ACCESS_ERR", ncclRemoteError,
              "the peer refused the access: registration mismatch (wrong rkey, buffer outside the "
              "registered range, or the region was deregistered by the peer)"};
    case IBV_WC_REM_OP_ERR:
      return {"IBV_WC_REM_OP_ERR", ncclRemoteError,
              "the peer could not complete the operation (its QP failed); check the peer's log"};
    case IBV_WC_RETRY_EXC_ERR:
      return {"IBV_WC_RETRY_EXC_ERR", ncclRemoteError,
              "no acknowledgement within the transport retries: the peer is unreachable or dead, "
              "or the fabric drops packets (PFC/ECN misconfigured for this traffic class); check "
              "the path with ping over the RoCE interface, and raise NCCL_IB_TIMEOUT on congested "
              "fabrics"};
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return {"IBV_WC_RNR_RETRY_EXC_ERR", ncclRemoteError,
              "the peer had no receive posted for too long (receiver not ready); the peer "
              "process may be stalled or gone"};
    case IBV_WC_REM_INV_RD_REQ_ERR:
      return {"IBV_WC_REM_INV_RD_REQ_ERR", ncclRemoteError,
              "the peer refused an RDMA READ (its QP lacks remote-read access or rd_atomic "
              "resources)"};
    case IBV_WC_REM_ABORT_ERR:
      return {"IBV_WC_REM_ABORT_ERR", ncclRemoteError, "the peer aborted the operation"};
    case IBV_WC_FATAL_ERR:
      return {"IBV_WC_FATAL_ERR", ncclSystemError,
              "the local NIC reported a fatal error; check dmesg and the NIC's firmware health"};
    case IBV_WC_RESP_TIMEOUT_ERR:
      return {"IBV_WC_RESP_TIMEOUT_ERR", ncclRemoteError,
              "the peer's response timed out; the peer or the path is failing"};
    case IBV_WC_GENERAL_ERR:
      return {"IBV_WC_GENERAL_ERR", ncclSystemError, "the NIC reported a general error"};
    default:
      return {"IBV_WC_(unknown status)", ncclSystemError,
              "the NIC reported a status this plugin does not know; check dmesg"};
  }
}

}  // namespace roce
