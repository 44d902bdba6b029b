// Everything connection setup hands over to a new RecvComm (core/datapath/recv_comm.h), in a
// header of its own so that the accepting side (core/connect/pending_accept.h) builds one without
// the receiver's data path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/datapath/comm_setup.h"
#include "core/memory/registered_buffer.h"

namespace roce {

// iflush's RDMA READ lands one byte per member, each member at its own cache line of flush_word:
// the members are separate NICs (in vroce, separate engine threads) whose READ responses would
// otherwise write the same byte concurrently.
inline constexpr size_t kFlushWordStride = 64;

struct RecvCommSetup : ConnectionSetup {
  std::unique_ptr<verbs::QueuePair> flush_qp;  // connected to itself; null: no flush
  // A virtual NIC's flush QPs on members 1.. (flush_word registered on each member's PD too).
  std::vector<std::unique_ptr<verbs::QueuePair>> more_flush_qps;
  RegisteredBuffer cts_staging;  // kMaxRequests x kMaxRecvs entries, local
  RegisteredBuffer sizes_area;   // kMaxRequests x kMaxRecvs int32, remote-writable
  RegisteredBuffer flush_word;   // iflush's READ targets: kFlushWordStride bytes per member
  uint64_t remote_ring_addr = 0;
  uint32_t remote_ring_rkey = 0;
  int fifo_traffic_class = 0;  // the data QPs' class (NCCL_IB_FIFO_TC, else traffic_class)
};

}  // namespace roce
