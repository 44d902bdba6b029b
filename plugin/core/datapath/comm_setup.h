// What connection setup hands to either end of a connection, besides that side's own buffers
// (recv_comm_setup.h, send_comm_setup.h). A header of its own, with the verbs owners only
// declared, so the connect room can hold a setup in progress without pulling in the data path.
// Whoever destroys one needs verbs/queue_pair.h; the connectors' destructors are out of line.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/datapath/recovery_epoch.h"

namespace roce {

class DeviceRuntime;

namespace verbs {
class CompletionQueue;
class QueuePair;
}  // namespace verbs
namespace net {
class PeerWatch;
}  // namespace net

// The devices a comm runs on: one port, or the members of a virtual NIC (member 0 first), and the
// plugin's device number NCCL named for them.
struct CommDevices {
  std::vector<std::shared_ptr<DeviceRuntime>> members;
  int id = 0;
};

struct ConnectionSetup {
  // The comm's devices: its port, or the members of the virtual NIC NCCL named (member 0 is the
  // comm's device, whose GID and class the handshake uses). QP q is on member
  // q / (qps.size() / members.size()); cq is member 0's, more_cqs the others' in order.
  std::vector<std::shared_ptr<DeviceRuntime>> members;
  int device_id = 0;  // the plugin's device number NCCL named (a port's or a virtual NIC's)
  std::shared_ptr<verbs::CompletionQueue> cq;
  std::vector<std::shared_ptr<verbs::CompletionQueue>> more_cqs;
  std::vector<std::unique_ptr<verbs::QueuePair>> qps;  // connected, in RTS
  int traffic_class = 0;
  bool split_data = false;  // NCCL_IB_SPLIT_DATA_ON_QPS (core/datapath/size_split.h)
  std::string peer;         // "10.0.0.2 (gid ::ffff:10.0.0.2)" for logs
  // The handshake's socket, watched for the peer process's death (net/peer_watch.h); null with
  // NCCL_ROCE_PEER_WATCH=0 or when the watch could not start.
  std::unique_ptr<net::PeerWatch> peer_watch;
  // Recovery epochs (recovery_epoch.h): on when both ends speak them and a peer watch carries
  // their frames.
  RecoverySetup recovery;
};

}  // namespace roce
