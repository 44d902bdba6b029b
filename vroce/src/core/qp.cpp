// RC queue pairs as verbs: creation with capability checks and rounded-up caps, the state
// machine of ibv_modify_qp (checked by core/qp_state_machine, then applied on the progress
// thread so that it is atomic with respect to the transport), ibv_query_qp and destruction.
#include "core/qp.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/context_objects.h"
#include "core/cq.h"
#include "core/device_state.h"
#include "core/engine.h"
#include "core/pd.h"
#include "core/protocol.h"
#include "core/qp_state_machine.h"
#include "core/verbs.h"
#include "device/async_event_queue.h"
#include "device/context.h"
#include "device/device.h"
#include "device/device_netns.h"
#include "stats/stats.h"
#include "util/log.h"
#include "wire/mtu.h"

namespace vroce::core {
namespace {

ibv_gid gid_of(const sockaddr_storage& addr) {
  ibv_gid gid{};
  if (addr.ss_family == AF_INET) {
    gid.raw[10] = 0xff;
    gid.raw[11] = 0xff;
    std::memcpy(&gid.raw[12], &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, 4);
  } else if (addr.ss_family == AF_INET6) {
    std::memcpy(gid.raw, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, 16);
  }
  return gid;
}

PortLimits port_limits(device::Device& dev) {
  PortLimits limits;
  const ibv_device_attr& attr = dev.device_attr();
  ibv_port_attr port = dev.port_attr();
  limits.active_mtu = port.active_mtu;
  limits.max_qp_rd_atom = static_cast<uint8_t>(std::min(attr.max_qp_rd_atom, 255));
  limits.max_qp_init_rd_atom = static_cast<uint8_t>(std::min(attr.max_qp_init_rd_atom, 255));
  limits.pkey_tbl_len = port.pkey_tbl_len;
  limits.phys_port_cnt = attr.phys_port_cnt;
  limits.gids = dev.gids();
  limits.source_gid = gid_of(dev.address());
  return limits;
}

std::string text_of(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

// The peer's address for a GRH, and whether the kernel has a route to it from the device's
// address (a NIC resolves the dgid to a MAC at RTR and fails when it cannot).
int resolve_peer(device::Device& dev, const ibv_global_route& grh, PeerPath* path,
                 std::string* why) {
  const sockaddr_storage& local = dev.address();
  sockaddr_storage peer{};
  socklen_t len;
  bool v4 = grh.dgid.raw[10] == 0xff && grh.dgid.raw[11] == 0xff &&
            std::all_of(grh.dgid.raw, grh.dgid.raw + 10, [](uint8_t b) { return b == 0; });
  if (v4) {
    auto& in = reinterpret_cast<sockaddr_in&>(peer);
    in.sin_family = AF_INET;
    in.sin_port = htons(wire::kRoceUdpPort);
    std::memcpy(&in.sin_addr, &grh.dgid.raw[12], 4);
    len = sizeof(sockaddr_in);
  } else {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(peer);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(wire::kRoceUdpPort);
    std::memcpy(&in6.sin6_addr, grh.dgid.raw, 16);
    if (IN6_IS_ADDR_LINKLOCAL(&in6.sin6_addr)) {
      in6.sin6_scope_id = static_cast<uint32_t>(dev.ifindex());
    }
    len = sizeof(sockaddr_in6);
  }
  if (peer.ss_family != local.ss_family) {
    *why = "grh.dgid " + text_of(peer) + " is of another IP family than the device address " +
           text_of(local);
    return EINVAL;
  }
  int fd = -1;
  {
    // Routes are the devices' namespace's, as a NIC resolves through its own netdev.
    const device::InDeviceNetns in_netns;
    if (!in_netns.ok()) {
      *why = in_netns.error();
      return EINVAL;
    }
    fd = ::socket(peer.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  }
  if (fd < 0) {
    *why = "socket(): " + std::string(std::strerror(errno));
    return EINVAL;
  }
  sockaddr_storage bind_addr = local;
  if (bind_addr.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(bind_addr).sin_port = 0;
  } else {
    reinterpret_cast<sockaddr_in6&>(bind_addr).sin6_port = 0;
  }
  socklen_t bind_len = bind_addr.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&bind_addr), bind_len);
  if (rc == 0) {
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&peer), len);
  }
  int err = errno;
  ::close(fd);
  if (rc != 0) {
    *why = "grh.dgid " + text_of(peer) + " is not reachable from " + dev.name() + " (" +
           text_of(local) + "): " + std::strerror(err) +
           "; check the peer's GID and that both addresses are in this network namespace";
    return EINVAL;
  }
  path->addr = peer;
  path->addr_len = len;
  auto flow = wire::flow_from_sockaddrs(reinterpret_cast<const sockaddr&>(local),
                                        reinterpret_cast<const sockaddr&>(peer));
  if (!flow) {
    *why = "cannot form the UDP flow to " + text_of(peer);
    return EINVAL;
  }
  path->flow = *flow;
  path->flow.src_port = wire::kRoceUdpPort;
  path->flow.dst_port = wire::kRoceUdpPort;
  path->traffic_class = grh.traffic_class;
  path->hop_limit = grh.hop_limit;
  return 0;
}

void reset_queues(Qp& qp) {
  {
    std::lock_guard lock(qp.sq.post_mutex);
    qp.sq.tail.store(0, std::memory_order_relaxed);
    qp.sq.free_head.store(0, std::memory_order_relaxed);
  }
  {
    std::lock_guard lock(qp.rq.post_mutex);
    qp.rq.tail.store(0, std::memory_order_relaxed);
    qp.rq.head.store(0, std::memory_order_relaxed);
  }
  bool active = qp.tp.active;
  bool registered = qp.tp.registered;
  qp.tp = QpTransport{};
  qp.tp.active = active;
  qp.tp.registered = registered;
}

// Runs on the progress thread: re-checks against the state the transport sees now, then
// applies the attributes and the transition.
int commit_modify(Engine& engine, Qp& qp, const ibv_qp_attr& attr, int mask,
                  const PortLimits& limits, const PeerPath& resolved, std::string* why) {
  ibv_qp_state from = qp.state.load(std::memory_order_relaxed);
  int rc = check_modify_qp(from, attr, mask, limits, why);
  if (rc != 0) {
    return rc;
  }
  ibv_qp_state to = (mask & IBV_QP_STATE) != 0 ? attr.qp_state : from;
  {
    std::lock_guard lock(qp.attr_mutex);
    apply_modify_qp(qp.attrs, attr, mask);
    qp.attrs.qp_state = to;
    qp.attrs.cur_qp_state = to;
    if (to == IBV_QPS_RESET) {
      qp.attrs = ibv_qp_attr{};
    }
  }
  if (to == IBV_QPS_RESET) {
    reset_queues(qp);
    qp.max_rd_atomic.store(0, std::memory_order_relaxed);
    qp.state.store(IBV_QPS_RESET, std::memory_order_relaxed);
    return 0;
  }
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
    qp.max_rd_atomic.store(attr.max_rd_atomic, std::memory_order_relaxed);
  }
  PeerPath& path = qp.tp.path;
  if ((mask & IBV_QP_AV) != 0) {
    uint32_t dest = path.dest_qpn;
    uint32_t pmtu = path.pmtu;
    path = resolved;
    path.dest_qpn = dest;
    path.pmtu = pmtu;
  }
  if ((mask & IBV_QP_PATH_MTU) != 0) {
    path.pmtu = *wire::mtu_bytes(attr.path_mtu);
  }
  if ((mask & IBV_QP_DEST_QPN) != 0) {
    path.dest_qpn = attr.dest_qp_num & 0xFFFFFF;
  }
  if (to == IBV_QPS_ERR) {
    if (from != IBV_QPS_ERR) {
      enter_error(engine, qp);
    }
    return 0;
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    responder_start(qp);
  }
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    requester_start(qp);
  }
  if ((mask & IBV_QP_MIN_RNR_TIMER) != 0) {
    qp.tp.resp.min_rnr_timer = attr.min_rnr_timer;
  }
  if (from == IBV_QPS_SQD && to == IBV_QPS_SQD) {
    // SQD->SQD may change the requester's limits; keep its window where it is.
    Requester saved = qp.tp.req;
    requester_start(qp);
    Requester& r = qp.tp.req;
    uint8_t timeout = r.timeout, retry = r.retry_cnt, rnr = r.rnr_retry, rd = r.max_rd_atomic;
    auto period = r.ack_period;
    r = saved;
    r.timeout = timeout;
    r.retry_cnt = retry;
    r.rnr_retry = rnr;
    r.max_rd_atomic = rd;
    r.ack_period = period;
  }
  if (from == IBV_QPS_RTS && to == IBV_QPS_SQD) {
    qp.tp.req.sqd_notify = (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) != 0 && attr.en_sqd_async_notify;
    qp.tp.req.drained_event_sent = false;
  }
  qp.state.store(to, std::memory_order_relaxed);
  engine.activate(&qp);
  return 0;
}

}  // namespace

ibv_qp* create_qp(ibv_pd* ibv_pd_ptr, ibv_qp_init_attr* init) {
  if (ibv_pd_ptr == nullptr || init == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  Pd* pd = to_pd(ibv_pd_ptr);
  device::Device& dev = pd->device->device();
  switch (init->qp_type) {
    case IBV_QPT_RC:
      break;
    case IBV_QPT_UC:
    case IBV_QPT_UD:
    case IBV_QPT_RAW_PACKET:
    case IBV_QPT_XRC_SEND:
    case IBV_QPT_XRC_RECV:
    case IBV_QPT_DRIVER:
      VROCE_LOG(Warn, "ibv_create_qp: QP type %d is not supported; vroce implements RC only",
                static_cast<int>(init->qp_type));
      errno = EOPNOTSUPP;
      return nullptr;
    default:
      errno = EINVAL;
      return nullptr;
  }
  if (init->srq != nullptr) {
    VROCE_LOG(Warn, "ibv_create_qp: shared receive queues are not supported");
    errno = EINVAL;
    return nullptr;
  }
  if (init->send_cq == nullptr || init->recv_cq == nullptr ||
      init->send_cq->context != ibv_pd_ptr->context ||
      init->recv_cq->context != ibv_pd_ptr->context) {
    VROCE_LOG(Warn, "ibv_create_qp: send_cq and recv_cq must be CQs of the PD's context");
    errno = EINVAL;
    return nullptr;
  }
  const ibv_device_attr& attr = dev.device_attr();
  ibv_qp_cap& cap = init->cap;
  if (cap.max_send_wr > static_cast<uint32_t>(attr.max_qp_wr) ||
      cap.max_recv_wr > static_cast<uint32_t>(attr.max_qp_wr) ||
      cap.max_send_sge > static_cast<uint32_t>(attr.max_sge) ||
      cap.max_recv_sge > static_cast<uint32_t>(attr.max_sge) ||
      cap.max_inline_data > kMaxInlineData) {
    VROCE_LOG(Warn,
              "ibv_create_qp: caps exceed the device (max_send_wr/max_recv_wr <= %d, "
              "max_send_sge/max_recv_sge <= %d, max_inline_data <= %u)",
              attr.max_qp_wr, attr.max_sge, kMaxInlineData);
    errno = EINVAL;
    return nullptr;
  }
  auto* qp = new (std::nothrow) Qp;
  if (qp == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  int error = 0;
  qp->engine = pd->device->engine(&error);
  if (!qp->engine) {
    delete qp;
    errno = error;
    return nullptr;
  }
  uint32_t inline_size = cap.max_inline_data == 0 ? 0 : (cap.max_inline_data + 15) & ~15u;
  try {
    qp->sq.init(cap.max_send_wr, cap.max_send_sge, inline_size);
    qp->rq.init(cap.max_recv_wr, cap.max_recv_sge);
  } catch (const std::bad_alloc&) {
    delete qp;
    errno = ENOMEM;
    return nullptr;
  }
  cap.max_send_wr = qp->sq.capacity();
  cap.max_recv_wr = qp->rq.capacity();
  cap.max_send_sge = qp->sq.max_sge();
  cap.max_recv_sge = qp->rq.max_sge();
  cap.max_inline_data = inline_size;

  qp->ctx = pd->ctx;
  qp->pd = pd;
  qp->send_cq = to_cq(init->send_cq);
  qp->recv_cq = to_cq(init->recv_cq);
  qp->device = pd->device;
  qp->sq_sig_all = init->sq_sig_all != 0;
  qp->cap = cap;
  qp->max_message = dev.port_attr().max_msg_sz;
  qp->ibv.context = ibv_pd_ptr->context;
  qp->ibv.qp_context = init->qp_context;
  qp->ibv.pd = ibv_pd_ptr;
  qp->ibv.send_cq = init->send_cq;
  qp->ibv.recv_cq = init->recv_cq;
  qp->ibv.srq = nullptr;
  qp->ibv.qp_num = pd->device->allocate_qpn();
  qp->ibv.handle = qp->ibv.qp_num;
  qp->ibv.state = IBV_QPS_RESET;
  qp->ibv.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&qp->ibv.mutex, nullptr);
  pthread_cond_init(&qp->ibv.cond, nullptr);
  qp->engine->add_qp(qp);
  qp->send_cq->qps.fetch_add(1, std::memory_order_relaxed);
  qp->recv_cq->qps.fetch_add(1, std::memory_order_relaxed);
  pd->children.fetch_add(1, std::memory_order_relaxed);
  track_context_object(qp->ctx, ContextObject::Qp, &qp->ibv);
  stats().live_qps.inc();
  return &qp->ibv;
}

int modify_qp(ibv_qp* ibv, ibv_qp_attr* attr, int mask) {
  if (ibv == nullptr || attr == nullptr) {
    return EINVAL;
  }
  Qp& qp = *to_qp(ibv);
  device::Device& dev = qp.device->device();
  PortLimits limits = port_limits(dev);
  std::string why;
  // Checked here first so that the route lookup below only sees a well-formed address vector,
  // and again on the progress thread against the state it sees then.
  int rc = check_modify_qp(qp.state.load(std::memory_order_relaxed), *attr, mask, limits, &why);
  PeerPath resolved;
  if (rc == 0 && (mask & IBV_QP_AV) != 0) {
    rc = resolve_peer(dev, attr->ah_attr.grh, &resolved, &why);
  }
  if (rc == 0) {
    rc = qp.engine->call(
        [&] { return commit_modify(*qp.engine, qp, *attr, mask, limits, resolved, &why); });
  }
  if (rc != 0) {
    VROCE_LOG(Warn, "ibv_modify_qp(qp 0x%x on %s, mask %s): %s", qp.ibv.qp_num, dev.name().c_str(),
              qp_mask_names(mask).c_str(), why.c_str());
    return rc;
  }
  ibv->state = qp.state.load(std::memory_order_relaxed);
  return 0;
}

int query_qp(ibv_qp* ibv, ibv_qp_attr* attr, int /*attr_mask*/, ibv_qp_init_attr* init_attr) {
  if (ibv == nullptr || attr == nullptr || init_attr == nullptr) {
    return EINVAL;
  }
  Qp& qp = *to_qp(ibv);
  ibv_qp_state state = qp.state.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(qp.attr_mutex);
    *attr = qp.attrs;
  }
  attr->qp_state = state;
  attr->cur_qp_state = state;
  attr->cap = qp.cap;
  attr->sq_draining = 0;
  if (attr->port_num == 0) {
    attr->port_num = 1;
  }
  *init_attr = ibv_qp_init_attr{};
  init_attr->qp_context = ibv->qp_context;
  init_attr->send_cq = ibv->send_cq;
  init_attr->recv_cq = ibv->recv_cq;
  init_attr->srq = nullptr;
  init_attr->cap = qp.cap;
  init_attr->qp_type = IBV_QPT_RC;
  init_attr->sq_sig_all = qp.sq_sig_all ? 1 : 0;
  ibv->state = state;
  return 0;
}

int destroy_qp(ibv_qp* ibv) {
  if (ibv == nullptr) {
    return EINVAL;
  }
  Qp* qp = to_qp(ibv);
  // After this the progress thread holds no reference to the QP.
  qp->engine->remove_qp(qp);
  qp->ctx->async_events->retire(ibv);
  qp->send_cq->qps.fetch_sub(1, std::memory_order_relaxed);
  qp->recv_cq->qps.fetch_sub(1, std::memory_order_relaxed);
  qp->pd->children.fetch_sub(1, std::memory_order_release);
  untrack_context_object(qp->ctx, ContextObject::Qp, ibv);
  stats().live_qps.dec();
  pthread_cond_destroy(&ibv->cond);
  pthread_mutex_destroy(&ibv->mutex);
  // The last QP of a device stops its engine (thread joined, socket closed) here.
  qp->engine.reset();
  delete qp;
  return 0;
}

}  // namespace vroce::core
