// What connection setup hands to either end of a connection, besides that side's own buffers
// (recv_comm_setup.h, send_comm_setup.h). A header of its own, with the verbs owners only
// declared, so the connect room can hold a setup in progress without pulling in the data path.
// Whoever destroys one needs verbs/queue_pair.h; the connectors' destructors are out of line.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace roce {

namespace verbs {
class CompletionQueue;
class QueuePair;
}  // namespace verbs

struct ConnectionSetup {
  std::shared_ptr<verbs::CompletionQueue> cq;
  std::vector<std::unique_ptr<verbs::QueuePair>> qps;  // connected, in RTS
  int traffic_class = 0;
  bool split_data = false;  // NCCL_IB_SPLIT_DATA_ON_QPS (core/datapath/size_split.h)
  std::string peer;         // "10.0.0.2 (gid ::ffff:10.0.0.2)" for logs
};

}  // namespace roce
