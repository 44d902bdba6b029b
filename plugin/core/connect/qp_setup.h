// Building blocks of connection setup shared by both sides: data QPs with the capacities the data
// path relies on, and bringing a QP from RESET to RTS against its peer with the agreed GRH.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/datapath/data_path_limits.h"
#include "core/device/device_runtime.h"
#include "core/memory/registered_buffer.h"
#include "net/handshake.h"
#include "verbs/completion_queue.h"
#include "verbs/memory_region.h"
#include "verbs/queue_pair.h"

namespace roce {

// Send-queue depth of a data QP. A sender's unretired work requests are bounded by its send
// requests (NCCL must test each to free it): at most kMaxSendRequests groups of n requests, each
// taking n + 1 WRs per QP, which peaks at n = 1 with adaptive routing (a WRITE and a zero-length
// WRITE WITH IMMEDIATE: 2 WRs per request); plus the drain marker.
inline constexpr uint32_t kSendQueueDepth = 1024;
static_assert(kSendQueueDepth >= 2 * kMaxSendRequests + 1,
              "a sender could run out of send-queue entries");
// Receives posted per QP: those posted ahead of the irecvs (data_path_limits.h), plus the drain
// marker.
inline constexpr uint32_t kRecvQueueDepth = kPrePostedRecvs + 1;
// Largest inline payload we ask for: a full CTS slot. Devices may grant less (or none).
inline constexpr uint32_t kWantedInline = 256;

// A CQ for one comm: every signaled completion of its QPs fits.
std::shared_ptr<verbs::CompletionQueue> create_comm_cq(DeviceRuntime& device, int nqps);

// An RC data QP on the comm's CQ. `inline_data`: ask for kWantedInline bytes of inline space
// (NCCL_IB_USE_INLINE / NCCL_ROCE_INLINE on, and the QP posts CTS entries or payload); false asks
// for none, and the data path then posts everything through registered memory.
std::unique_ptr<verbs::QueuePair> create_data_qp(DeviceRuntime& device,
                                                 const std::shared_ptr<verbs::CompletionQueue>& cq,
                                                 uint32_t recv_depth, bool inline_data);

// What the peer told us about one of its QPs, and how the link must look.
struct QpLink {
  std::array<uint8_t, 16> peer_gid{};
  uint32_t peer_qpn = 0;
  uint32_t peer_psn = 0;
  uint32_t local_psn = 0;
  ibv_mtu mtu = IBV_MTU_1024;
  uint8_t traffic_class = 0;
  uint8_t service_level = 0;
  uint8_t timeout = 20;
  uint8_t retry_count = 7;
  uint16_t pkey_index = 0;
  unsigned access = IBV_ACCESS_REMOTE_WRITE;
  // ECE to set between INIT and RTR (the peer's, or what the peer's device reduced ours to);
  // nullopt: none. connect_qp reports whether the device took it.
  std::optional<ibv_ece> ece;
};

// RESET -> INIT -> (set ECE) -> RTR -> RTS; the traffic class is read back after RTR (verbs
// layer) and a difference is an error. Throws verbs::VerbsError naming the QP, the step and the
// fix. Returns true when link.ece was set (false: none asked, or the device has no ECE).
bool connect_qp(verbs::QueuePair& qp, DeviceRuntime& device, const QpLink& link);

// The wire form of an ECE (all zero: not supported) and back.
net::Ece ece_to_wire(const std::optional<ibv_ece>& ece);
std::optional<ibv_ece> ece_from_wire(const net::Ece& ece);

// "ece vendor 0x15b3 options 0x30000002" or "no ece", for the connect and accept lines.
std::string describe_ece(const std::optional<ibv_ece>& ece);

// A random starting PSN (24 bits), so a stale packet of an earlier connection is not taken for
// one of this connection.
uint32_t random_psn();

// The smaller of two ibv_mtu values.
constexpr ibv_mtu min_mtu(ibv_mtu a, ibv_mtu b) noexcept {
  return a < b ? a : b;
}

}  // namespace roce
