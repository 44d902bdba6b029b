// What both connection state machines (send_connector.h, pending_accept.h) share: the settings
// they apply, this side's class offer, the EndpointInfo this side sends, and text for logs.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/connect/class_negotiation.h"
#include "net/handshake.h"
#include "net/peer_watch.h"
#include "net/socket.h"

namespace roce {

class DeviceRuntime;
namespace verbs {
class QueuePair;
}  // namespace verbs

// The settings of util/config.h that connection setup applies, read once per connection.
struct ConnectionSettings {
  int qps_per_connection = 1;
  uint8_t timeout = 20;
  uint8_t retry_count = 7;
  uint16_t pkey_index = 0;
  std::chrono::milliseconds handshake_timeout{30000};
  bool flush = true;  // GPUDirect flush QP on receivers (off with NCCL_GDR_FLUSH_DISABLE)
  // NCCL_IB_USE_INLINE / NCCL_ROCE_INLINE: CTS entries and small host payloads posted inline;
  // off, the data QPs get max_inline_data 0.
  bool use_inline = true;
  bool split_data = false;  // NCCL_IB_SPLIT_DATA_ON_QPS (the sender's is sent to the receiver)
  // NCCL_IB_FIFO_TC: the class of a receiver's data QPs (its clear-to-send writes and the ACKs
  // of the data), as net_ib applies it; nullopt: the agreed traffic class.
  std::optional<int> fifo_traffic_class;
  bool ece_enable = true;         // NCCL_IB_ECE_ENABLE: the sender offers its ECE
  bool adaptive_routing = false;  // NCCL_IB_ADAPTIVE_ROUTING (sender only)
  uint32_t ar_threshold = 8192;   // NCCL_IB_AR_THRESHOLD
  bool peer_watch = true;         // NCCL_ROCE_PEER_WATCH (net/peer_watch.h)
  int peer_keepalive_s = 20;      // NCCL_ROCE_PEER_KEEPALIVE_S
  bool failover = true;           // NCCL_ROCE_FAILOVER (core/datapath/recovery_epoch.h)
  int recovery_timeout_s = 300;   // NCCL_ROCE_RECOVERY_TIMEOUT_S
  static ConnectionSettings from_config();
};

// Largest handshake frame we accept: far above any valid message, small enough that thousands
// of hostile connections cost little.
inline constexpr size_t kMaxHandshakeFrame = 4096;

// This side's class and SL for a comm whose communicator asked for `comm_traffic_class`
// (NCCL_NET_TRAFFIC_CLASS_UNDEF: none); fails for an invalid class.
Result<ClassOffer> local_class_offer(int comm_traffic_class);

// This side's EndpointInfo: device, GID, MTU, class and SL, and each QP with its starting PSN;
// for a virtual NIC the GID and MTU of every member after the first.
net::EndpointInfo local_endpoint(const std::vector<std::shared_ptr<DeviceRuntime>>& members,
                                 int traffic_class, int service_level,
                                 const std::vector<std::unique_ptr<verbs::QueuePair>>& qps,
                                 const std::vector<uint32_t>& psns);

// "mlx5_0", or a virtual NIC's "mlx5_0+mlx5_1", for logs.
std::string devices_name(const std::vector<std::shared_ptr<DeviceRuntime>>& members);

// "10.0.0.2:41234 (dev mlx5_1, gid ::ffff:10.0.0.2)" for logs and errors.
std::string describe_peer(const net::SocketAddress& address, const net::EndpointInfo* endpoint);

// A Reject as the peer will log it: `text` cut to kMaxRejectTextLength, printable ASCII only.
// `nonce`: the listen handle's, which the sender knows (0: do not claim one).
net::Reject make_reject(net::RejectReason reason, const std::string& text, uint64_t nonce);

// Encodes `message` and queues it on `channel` (no I/O yet). Fails with the encoder's reason
// for an invalid message, or with the channel's error when it refuses the frame.
Status queue_message(net::FramedChannel& channel, const net::HandshakeMessage& message);

// The peer watch (net/peer_watch.h). queue_watch_hello: this side's Hello, queued on the
// handshake's channel behind what is already queued (settings.peer_watch only).
Status queue_watch_hello(net::FramedChannel& channel, uint64_t nonce);
// Hands the channel's socket to the process's watcher for the comm about to be made, whose
// device's health checks it nudges when the peer is gone. Null (the socket closes, as before the
// watch) with NCCL_ROCE_PEER_WATCH=0, or when the watcher cannot take it (one WARN).
std::unique_ptr<net::PeerWatch> watch_peer(net::FramedChannel& channel, uint64_t nonce,
                                           const ConnectionSettings& settings,
                                           const DeviceRuntime& device,
                                           const std::string& peer_text);

// Queues a Reject and tries once to send it; never blocks (the peer may not read it).
// `nonce`: the listen handle's, which the sender knows (0: do not claim one).
void send_reject_best_effort(net::FramedChannel& channel, net::RejectReason reason,
                             const std::string& text, uint64_t nonce);

}  // namespace roce
