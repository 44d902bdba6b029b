// Everything connection setup hands over to a new RecvComm (core/datapath/recv_comm.h), in a
// header of its own so that the accepting side (core/connect/pending_accept.h) builds one without
// the receiver's data path.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/datapath/comm_setup.h"
#include "core/memory/registered_buffer.h"

namespace roce {

struct RecvCommSetup : ConnectionSetup {
  std::unique_ptr<verbs::QueuePair> flush_qp;  // connected to itself; null: no flush
  // A virtual NIC's flush QPs on members 1.. (flush_word registered on each member's PD too).
  std::vector<std::unique_ptr<verbs::QueuePair>> more_flush_qps;
  RegisteredBuffer cts_staging;  // kMaxRequests x kMaxRecvs entries, local
  RegisteredBuffer sizes_area;   // kMaxRequests x kMaxRecvs int32, remote-writable
  RegisteredBuffer flush_word;   // the RDMA READ target of iflush
  uint64_t remote_ring_addr = 0;
  uint32_t remote_ring_rkey = 0;
  int fifo_traffic_class = 0;  // the data QPs' class (NCCL_IB_FIFO_TC, else traffic_class)
};

}  // namespace roce
