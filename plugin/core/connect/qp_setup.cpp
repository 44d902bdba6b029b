// Connection building blocks: see qp_setup.h.
#include "core/connect/qp_setup.h"

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <new>

#include "verbs/error.h"
#include "verbs/qp_attributes.h"

namespace roce {

std::shared_ptr<verbs::CompletionQueue> create_comm_cq(DeviceRuntime& device, int nqps) {
  // Sender: one signaled completion per group and QP (<= kMaxSendRequests groups). Receiver:
  // one receive completion per irecv and QP, the periodic CTS signals, flushes.
  const int entries = (kMaxSendRequests + kMaxRequests) * nqps + 2 * kMaxRequests + 64;
  return verbs::CompletionQueue::create(device.context(), entries);
}

std::unique_ptr<verbs::QueuePair> create_data_qp(DeviceRuntime& device,
                                                 const std::shared_ptr<verbs::CompletionQueue>& cq,
                                                 uint32_t recv_depth, bool inline_data) {
  verbs::QpCapabilities caps;
  caps.max_send_wr = kSendQueueDepth;
  caps.max_recv_wr = recv_depth;
  caps.max_send_sge = 1;
  caps.max_recv_sge = 1;
  caps.max_inline_data = inline_data ? kWantedInline : 0;
  if (!inline_data) {
    return verbs::QueuePair::create_rc(device.pd(), cq, cq, caps);
  }
  try {
    return verbs::QueuePair::create_rc(device.pd(), cq, cq, caps);
  } catch (const verbs::VerbsError&) {
    // Some devices offer no inline data; the data path then posts through the staging MR.
    caps.max_inline_data = 0;
    return verbs::QueuePair::create_rc(device.pd(), cq, cq, caps);
  }
}

bool connect_qp(verbs::QueuePair& qp, DeviceRuntime& device, const QpLink& link) {
  verbs::InitAttributes init;
  init.pkey_index = link.pkey_index;
  init.port = device.port();
  init.access_flags = link.access;
  qp.to_init(init);
  const bool ece_set = link.ece && qp.set_ece(*link.ece);

  verbs::RtrAttributes rtr;
  std::memcpy(rtr.dgid.raw, link.peer_gid.data(), 16);
  rtr.sgid_index = static_cast<uint8_t>(device.gid_index());
  rtr.hop_limit = 255;
  rtr.traffic_class = link.traffic_class;
  rtr.service_level = link.service_level;
  rtr.path_mtu = link.mtu;
  rtr.dest_qpn = link.peer_qpn;
  rtr.rq_psn = link.peer_psn;
  rtr.max_dest_rd_atomic = 1;
  rtr.min_rnr_timer = 12;
  qp.to_rtr(rtr);

  verbs::RtsAttributes rts;
  rts.timeout = link.timeout;
  rts.retry_cnt = link.retry_count;
  rts.rnr_retry = 7;
  rts.sq_psn = link.local_psn;
  rts.max_rd_atomic = 1;
  qp.to_rts(rts);
  return ece_set;
}

net::Ece ece_to_wire(const std::optional<ibv_ece>& ece) {
  net::Ece out;
  if (ece) {
    out.supported = 1;
    out.vendor_id = ece->vendor_id;
    out.options = ece->options;
    out.comp_mask = ece->comp_mask;
  }
  return out;
}

std::optional<ibv_ece> ece_from_wire(const net::Ece& ece) {
  if (ece.supported == 0) {
    return std::nullopt;
  }
  ibv_ece out{};
  out.vendor_id = ece.vendor_id;
  out.options = ece.options;
  out.comp_mask = ece.comp_mask;
  return out;
}

std::string describe_ece(const std::optional<ibv_ece>& ece) {
  if (!ece) {
    return "no ece";
  }
  return fmt::format("ece vendor 0x{:x} options 0x{:x}", ece->vendor_id, ece->options);
}

uint32_t random_psn() {
  uint32_t value = 0;
  if (getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
    // Only without entropy this early after boot, or under a seccomp filter. A PSN has to
    // differ between connections, not to be secret: the clock will do.
    value = static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  return value & verbs::kMax24Bit;
}

}  // namespace roce
