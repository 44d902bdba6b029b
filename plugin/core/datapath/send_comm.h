// The sending end of a connection. It owns the clear-to-send ring the receiver writes into, the
// data QPs and their CQ, and the pools the data path draws from. isend matches each send to the
// oldest pending multi-receive (by tag), and once all n entries of that multi-receive are matched
// posts, on every data QP, the RDMA WRITEs of its share of the data ending in one signaled WRITE
// WITH IMMEDIATE (which also carries the sizes of a multi-receive). test polls the CQ and maps
// each completion to its group by wr_id. No allocation, lock or syscall of ours on these paths.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/datapath/connected_comm.h"
#include "core/datapath/cts_ring.h"
#include "core/datapath/data_path_limits.h"
#include "core/datapath/multi_recv_match.h"
#include "core/datapath/request.h"
#include "core/datapath/request_pool.h"
#include "core/datapath/send_comm_setup.h"
#include "core/datapath/send_queue_credits.h"
#include "core/datapath/size_split.h"
#include "core/memory/mr_handle.h"
#include "core/memory/registered_buffer.h"
#include "telemetry/connection_telemetry.h"

namespace roce {

class SendComm final : public ConnectedComm {
 public:
  SendComm(std::shared_ptr<DeviceRuntime> device, SendCommSetup setup);
  ~SendComm() override;

  // phandle: NCCL's profiler handle for this send (v10+), or nullptr.
  ncclResult_t isend(void* data, size_t size, int tag, const MrHandle* mh, void* phandle,
                     void** request) noexcept;
  ncclResult_t test(SendRequest& request, int* done, int* size) noexcept;

  // For logs and tests: the largest payload posted inline (the QPs' granted max_inline_data; 0:
  // inlining is off).
  uint32_t max_inline() const noexcept { return max_inline_; }

 private:
  ncclResult_t post_group() noexcept;
  // The QPs [first, last) that carry the message of sequence next_seq_: all of them when
  // splitting, else the one qp_of_message names.
  std::pair<int, int> qps_of_message() const noexcept {
    if (split_data_) {
      return {0, nqps_};
    }
    const int q = qp_of_message(next_seq_, nqps_);
    return {q, q + 1};
  }
  ncclResult_t progress() noexcept;
  // The stall checks of a health check (connected_comm.h).
  ncclResult_t check_side_health() noexcept override;
  // Inline (defined in send_comm.cpp, used by progress() only): a call of its own would cost
  // more than its telemetry.
  [[gnu::always_inline]] inline void complete_group(SendRequest& lead) noexcept;
  // The isend that found no clear-to-send at first has it now: the wait is recorded. Out of
  // line: most sends find their clear-to-send at once.
  [[gnu::noinline]] void cts_wait_ended(uint64_t now) noexcept;
  // NCCL_ROCE_STALL_WARN_MS reached by an isend waiting for its clear-to-send, or by the oldest
  // send waiting for its completion: a WARN.
  void check_cts_stall() noexcept;
  void check_completion_stall() noexcept;

  // Hot members first.
  const CtsEntry* ring_entries_;
  int32_t* sizes_staging_;
  uint32_t sizes_staging_lkey_;
  uint64_t remote_sizes_addr_;
  uint32_t remote_sizes_rkey_;
  // Sends above this go as WRITE + zero-length WRITE WITH IMMEDIATE (adaptive routing); off:
  // UINT64_MAX, so the data path compares without a branch on the mode.
  uint64_t ar_threshold_;
  uint32_t max_inline_;
  PendingMultiRecv pending_;
  RequestPool<SendRequest, kMaxSendRequests> requests_;
  std::array<SendQueueCredits, kMaxQpsPerConnection> credits_{};
  std::array<ibv_send_wr, kMaxRecvs + 1> wrs_{};
  std::array<ibv_sge, kMaxRecvs + 1> sges_{};
  uint64_t cts_wait_since_ = 0;  // an isend found no clear-to-send since then; 0: none

  // Cold: the buffers the QPs' work requests point into (the destructor destroys the QPs first).
  RegisteredBuffer ring_;
  RegisteredBuffer sizes_staging_buffer_;
};

}  // namespace roce
