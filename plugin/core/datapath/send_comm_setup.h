// Everything connection setup hands over to a new SendComm (core/datapath/send_comm.h), in a
// header of its own so that the connecting side (core/connect/send_connector.h) builds one without
// the sender's data path.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/datapath/comm_setup.h"
#include "core/memory/registered_buffer.h"

namespace roce {

struct SendCommSetup : ConnectionSetup {
  RegisteredBuffer ring;           // kCtsRingBytes, remote-writable by the receiver
  RegisteredBuffer sizes_staging;  // kMaxSendRequests x kMaxRecvs int32, local
  uint64_t remote_sizes_addr = 0;  // the receiver's multi-receive sizes area
  uint32_t remote_sizes_rkey = 0;
  std::vector<uint32_t> more_remote_sizes_rkeys;  // its keys on members 1.. of a virtual NIC
  // NCCL_IB_ADAPTIVE_ROUTING: a single send above ar_threshold bytes goes as RDMA WRITE and a
  // separate zero-length WRITE WITH IMMEDIATE; nullopt: off.
  std::optional<uint32_t> ar_threshold;
};

}  // namespace roce
