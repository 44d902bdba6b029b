// Two discovered vroce devices with one RC QP each, connected to each other and brought to RTS,
// for tests that move data through the verbs layer.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "core/device/device_discovery.h"
#include "hang_bound.h"
#include "verbs/completion_queue.h"
#include "verbs/protection_domain.h"
#include "verbs/queue_pair.h"

namespace roce::test {

struct Side {
  const PluginDevice* device = nullptr;
  std::shared_ptr<verbs::ProtectionDomain> pd;
  std::shared_ptr<verbs::CompletionQueue> cq;
  std::unique_ptr<verbs::QueuePair> qp;
};

inline Side make_side(const PluginDevice& device) {
  Side side;
  side.device = &device;
  side.pd = verbs::ProtectionDomain::create(device.context);
  side.cq = verbs::CompletionQueue::create(device.context, 64);
  verbs::QpCapabilities caps;
  caps.max_send_wr = 16;
  caps.max_recv_wr = 16;
  side.qp = verbs::QueuePair::create_rc(side.pd, side.cq, side.cq, caps);
  side.qp->to_init(
      {0, static_cast<uint8_t>(device.port), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE});
  return side;
}

inline verbs::RtrAttributes rtr_towards(const Side& self, const Side& peer, uint8_t traffic_class) {
  verbs::RtrAttributes rtr;
  std::memcpy(rtr.dgid.raw, peer.device->gid.entry.gid.data(), sizeof(rtr.dgid.raw));
  rtr.sgid_index = static_cast<uint8_t>(self.device->gid.index);
  rtr.traffic_class = traffic_class;
  rtr.path_mtu = std::min(self.device->active_mtu, peer.device->active_mtu);
  rtr.dest_qpn = peer.qp->qp_num();
  return rtr;
}

// Both QPs to RTS with the given class (timeout 14: about 67 ms per retry).
inline void connect(Side& a, Side& b, uint8_t traffic_class) {
  a.qp->to_rtr(rtr_towards(a, b, traffic_class));
  b.qp->to_rtr(rtr_towards(b, a, traffic_class));
  verbs::RtsAttributes rts;
  rts.timeout = 14;
  a.qp->to_rts(rts);
  b.qp->to_rts(rts);
}

inline ibv_wc wait_for_completion(verbs::CompletionQueue& cq) {
  using namespace std::chrono_literals;
  const auto deadline = std::chrono::steady_clock::now() + roce::test::kHangBound;
  ibv_wc wc{};
  for (;;) {
    const int n = cq.poll(1, &wc);
    REQUIRE(n >= 0);
    if (n == 1) {
      return wc;
    }
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(100us);
  }
}

// One signaled RDMA WRITE of [local, +length) to remote_addr; waits for its completion.
inline ibv_wc rdma_write(Side& from, const void* local, uint32_t length, uint32_t lkey,
                         uint64_t remote_addr, uint32_t rkey) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(local);
  sge.length = length;
  sge.lkey = lkey;
  ibv_send_wr wr{};
  wr.wr_id = remote_addr;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  REQUIRE(from.qp->post_send(&wr, &bad) == 0);
  return wait_for_completion(*from.cq);
}

}  // namespace roce::test
