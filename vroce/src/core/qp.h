// An RC queue pair: its public ibv_qp, its queues, the attribute set ibv_query_qp reports, and
// the transport state its device's progress thread runs. The state is authoritative in `state`
// (the progress thread moves a QP to ERR on its own); ibv_qp::state is refreshed by
// ibv_modify_qp and ibv_query_qp, as rdma-core does.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/qp_transport.h"
#include "core/work_queue.h"

namespace vroce::device {
struct Context;
}  // namespace vroce::device

namespace vroce::core {

struct Pd;
struct Cq;
class DeviceState;
class Engine;

struct Qp {
  ibv_qp ibv{};  // first member: users hold &ibv
  device::Context* ctx = nullptr;
  Pd* pd = nullptr;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  DeviceState* device = nullptr;
  std::shared_ptr<Engine> engine;
  bool sq_sig_all = false;
  ibv_qp_cap cap{};                          // as granted (rounded up)
  uint64_t max_message = uint64_t{1} << 30;  // the port's max_msg_sz
  std::atomic<uint8_t> max_rd_atomic{0};     // for post-time READ checks

  SendQueue sq;
  RecvQueue rq;

  std::atomic<ibv_qp_state> state{IBV_QPS_RESET};
  std::mutex attr_mutex;
  ibv_qp_attr attrs{};  // guarded by attr_mutex; what ibv_query_qp reports
  // ibv_set_ece's options (guarded by attr_mutex): applied when the QP reaches RTR (core/ece.h).
  bool ece_set = false;
  uint32_t ece_requested = 0;

  std::atomic<uint32_t> async_events_raised{0};
  std::atomic<bool> kick_queued{false};  // on the engine's list of QPs posted to

  QpTransport tp;  // progress thread only
};

inline Qp* to_qp(ibv_qp* qp) noexcept {
  return reinterpret_cast<Qp*>(qp);
}

}  // namespace vroce::core
