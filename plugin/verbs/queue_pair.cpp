// RC queue pair creation, transitions, traffic-class read-back and teardown: see queue_pair.h.
#include "verbs/queue_pair.h"

#include <cerrno>
#include <chrono>
#include <thread>

#include "util/config.h"
#include "util/log.h"
#include "verbs/error.h"

namespace roce::verbs {
namespace {

// Long enough for any device to flush a full queue; short enough that a close never hangs.
constexpr auto kDrainTimeout = std::chrono::seconds(2);
// A queue without a marker is taken as flushed after this long without a completion.
constexpr auto kDrainQuietPeriod = std::chrono::milliseconds(20);

const char* hint(ibv_qp_state to, int err) {
  switch (to) {
    case IBV_QPS_INIT:
      return err == EINVAL ? "; check the port number and NCCL_IB_PKEY" : "";
    case IBV_QPS_RTR:
      if (err == EINVAL) {
        return "; the port refused an attribute: the GID at sgid_index may be empty or not "
               "RoCE v2 (NCCL_IB_GID_INDEX), or path_mtu is above the port's active MTU";
      }
      if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == ENODATA) {
        return "; the peer's GID could not be resolved to a MAC address: check that its IP "
               "address is reachable from this port's interface (ip route get <addr>)";
      }
      return "";
    case IBV_QPS_RTS:
      return err == EINVAL ? "; check NCCL_IB_TIMEOUT (0..31) and NCCL_IB_RETRY_CNT (0..7)" : "";
    default:
      return "";
  }
}

std::string caps_text(const QpCapabilities& caps) {
  return fmt::format("send_wr {}, recv_wr {}, send_sge {}, recv_sge {}, inline {}",
                     caps.max_send_wr, caps.max_recv_wr, caps.max_send_sge, caps.max_recv_sge,
                     caps.max_inline_data);
}

}  // namespace

std::unique_ptr<QueuePair> QueuePair::create_rc(std::shared_ptr<ProtectionDomain> pd,
                                                std::shared_ptr<CompletionQueue> send_cq,
                                                std::shared_ptr<CompletionQueue> recv_cq,
                                                const QpCapabilities& caps) {
  const Context& ctx = *pd->context();
  if (send_cq->context() != pd->context() || recv_cq->context() != pd->context()) {
    throw VerbsError(fmt::format("dev {}: a QP's completion queues must belong to the device of "
                                 "its protection domain",
                                 ctx.name()),
                     EINVAL);
  }
  ibv_qp_init_attr init{};
  init.send_cq = send_cq->get();
  init.recv_cq = recv_cq->get();
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = caps.max_send_wr;
  init.cap.max_recv_wr = caps.max_recv_wr;
  init.cap.max_send_sge = caps.max_send_sge;
  init.cap.max_recv_sge = caps.max_recv_sge;
  init.cap.max_inline_data = caps.max_inline_data;
  errno = 0;
  ibv_qp* qp = ctx.lib().fn().create_qp(pd->get(), &init);
  if (qp == nullptr) {
    const int err = errno != 0 ? errno : ENOMEM;
    const ibv_device_attr& dev = ctx.device_attr();
    throw VerbsError(fmt::format("dev {}: ibv_create_qp (RC; {}) failed: {}; the device allows "
                                 "max_qp_wr {}, max_sge {}, max_qp {}",
                                 ctx.name(), caps_text(caps), errno_text(err), dev.max_qp_wr,
                                 dev.max_sge, dev.max_qp),
                     err);
  }
  QpCapabilities granted;
  granted.max_send_wr = init.cap.max_send_wr;
  granted.max_recv_wr = init.cap.max_recv_wr;
  granted.max_send_sge = init.cap.max_send_sge;
  granted.max_recv_sge = init.cap.max_recv_sge;
  granted.max_inline_data = init.cap.max_inline_data;
  std::unique_ptr<QueuePair> wrapper(
      new QueuePair(std::move(pd), std::move(send_cq), std::move(recv_cq), qp, granted));
  qp->qp_context = wrapper.get();
  return wrapper;
}

QueuePair::QueuePair(std::shared_ptr<ProtectionDomain> pd, std::shared_ptr<CompletionQueue> send_cq,
                     std::shared_ptr<CompletionQueue> recv_cq, ibv_qp* qp,
                     const QpCapabilities& caps)
    : pd_(std::move(pd)),
      send_cq_(std::move(send_cq)),
      recv_cq_(std::move(recv_cq)),
      qp_(qp),
      caps_(caps),
      limits_(limits_of(pd_->context()->device_attr())) {}

QueuePair::~QueuePair() {
  if (pd_->context()->lost()) {
    // DEVICE_FATAL: nothing will be flushed; destroy at once (see Context::lost()).
  } else if (state_ != IBV_QPS_RESET && state_ != IBV_QPS_ERR) {
    try {
      to_error();
    } catch (const std::exception& e) {
      ROCE_WARN(NCCL_NET, "{}; destroying the QP without draining it", e.what());
    }
  }
  if (state_ == IBV_QPS_ERR && !pd_->context()->lost()) {
    drain();
  }
  const uint32_t qpn = qp_->qp_num;
  errno = 0;
  const int err = verbs_errno(pd_->context()->lib().fn().destroy_qp(qp_));
  if (err != 0) {
    ROCE_WARN(NCCL_NET, "qp 0x{:x} on {}: ibv_destroy_qp failed: {}", qpn, pd_->context()->name(),
              errno_text(err));
  }
  magic_ = 0;
}

void QueuePair::fail(ibv_qp_state to, const std::string& what, int err) const {
  throw VerbsError(fmt::format("qp 0x{:x} on {} port {}: {}->{} failed: {}{}", qp_->qp_num,
                               pd_->context()->name(), port_, qp_state_name(state_),
                               qp_state_name(to), what, hint(to, err)),
                   err);
}

void QueuePair::modify(ibv_qp_attr& attr, int mask, ibv_qp_state to,
                       const std::string& attributes) {
  attr.qp_state = to;
  // As NCCL: ETIMEDOUT (address resolution at RTR not finished yet) is retried, any error with
  // NCCL_IB_MQP_RETRY_ALL=1, up to NCCL_IB_MQP_RETRY_CNT times NCCL_IB_MQP_RETRY_SLEEP_MSEC apart.
  const Config& cfg = config();
  int retries = 0;
  int err = 0;
  for (;;) {
    errno = 0;
    err = verbs_errno(pd_->context()->lib().fn().modify_qp(qp_, &attr, mask));
    if (err == 0 || (err != ETIMEDOUT && !cfg.mqp_retry_all) || retries >= cfg.mqp_retry_count) {
      break;
    }
    ++retries;
    ROCE_INFO(NCCL_NET,
              "qp 0x{:x} on {}: {}->{}: ibv_modify_qp returned {}; retry {} of {} in {} ms",
              qp_->qp_num, pd_->context()->name(), qp_state_name(state_), qp_state_name(to),
              errno_text(err), retries, cfg.mqp_retry_count, cfg.mqp_retry_sleep_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(cfg.mqp_retry_sleep_ms));
  }
  if (err != 0) {
    fail(to,
         fmt::format("ibv_modify_qp returned {}{} (attributes: {})", errno_text(err),
                     retries > 0 ? fmt::format(" after {} retries (NCCL_IB_MQP_RETRY_CNT)", retries)
                                 : std::string(),
                     attributes),
         err);
  }
  state_ = to;
}

void QueuePair::to_init(const InitAttributes& attrs) {
  if (const Status checked = check(attrs, limits_); !checked) {
    fail(IBV_QPS_INIT, checked.error(), EINVAL);
  }
  ibv_qp_attr attr{};
  attr.pkey_index = attrs.pkey_index;
  attr.port_num = attrs.port;
  attr.qp_access_flags = attrs.access_flags;
  port_ = attrs.port;
  modify(attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, IBV_QPS_INIT,
         describe(attrs));
}

void QueuePair::to_rtr(const RtrAttributes& attrs) {
  if (const Status checked = check(attrs, limits_); !checked) {
    fail(IBV_QPS_RTR, checked.error(), EINVAL);
  }
  ibv_qp_attr attr{};
  attr.path_mtu = attrs.path_mtu;
  attr.dest_qp_num = attrs.dest_qpn;
  attr.rq_psn = attrs.rq_psn;
  attr.max_dest_rd_atomic = attrs.max_dest_rd_atomic;
  attr.min_rnr_timer = attrs.min_rnr_timer;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.dgid = attrs.dgid;
  attr.ah_attr.grh.sgid_index = attrs.sgid_index;
  attr.ah_attr.grh.hop_limit = attrs.hop_limit;
  attr.ah_attr.grh.traffic_class = attrs.traffic_class;
  attr.ah_attr.grh.flow_label = 0;
  attr.ah_attr.sl = attrs.service_level;
  attr.ah_attr.src_path_bits = 0;
  attr.ah_attr.port_num = port_;
  modify(attr,
         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
         IBV_QPS_RTR, describe(attrs));

  const uint8_t applied = query_traffic_class();
  if (applied != attrs.traffic_class) {
    throw VerbsError(
        fmt::format("qp 0x{:x} on {} port {}: traffic class read back after RTR is {} (dscp {}) "
                    "but {} (dscp {}) was requested; something on this host rewrites the class "
                    "(e.g. mlx5's /sys/class/infiniband/{}/tc/{}/traffic_class); refusing to run "
                    "on a class other than the configured one",
                    qp_->qp_num, pd_->context()->name(), port_, applied, applied >> 2,
                    attrs.traffic_class, attrs.traffic_class >> 2, pd_->context()->name(), port_),
        EPROTO);
  }
}

void QueuePair::to_rts(const RtsAttributes& attrs) {
  if (const Status checked = check(attrs, limits_); !checked) {
    fail(IBV_QPS_RTS, checked.error(), EINVAL);
  }
  ibv_qp_attr attr{};
  attr.timeout = attrs.timeout;
  attr.retry_cnt = attrs.retry_cnt;
  attr.rnr_retry = attrs.rnr_retry;
  attr.sq_psn = attrs.sq_psn;
  attr.max_rd_atomic = attrs.max_rd_atomic;
  modify(attr,
         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
             IBV_QP_MAX_QP_RD_ATOMIC,
         IBV_QPS_RTS, describe(attrs));
}

void QueuePair::to_error() {
  ibv_qp_attr attr{};
  modify(attr, IBV_QP_STATE, IBV_QPS_ERR, "state only");
}

std::optional<ibv_ece> QueuePair::query_ece() const {
  const auto fn = pd_->context()->lib().fn().query_ece;
  if (fn == nullptr) {
    return std::nullopt;
  }
  ibv_ece ece{};
  errno = 0;
  const int err = verbs_errno(fn(qp_, &ece));
  if (err == EOPNOTSUPP) {  // ENOTSUP is the same value on Linux
    return std::nullopt;
  }
  if (err != 0) {
    throw VerbsError(fmt::format("qp 0x{:x} on {} port {}: ibv_query_ece failed: {}; set "
                                 "NCCL_IB_ECE_ENABLE=0 to connect without ECE",
                                 qp_->qp_num, pd_->context()->name(), port_, errno_text(err)),
                     err);
  }
  return ece;
}

bool QueuePair::set_ece(const ibv_ece& ece) {
  const auto fn = pd_->context()->lib().fn().set_ece;
  if (fn == nullptr) {
    return false;
  }
  ibv_ece copy = ece;
  errno = 0;
  const int err = verbs_errno(fn(qp_, &copy));
  if (err == EOPNOTSUPP) {  // ENOTSUP is the same value on Linux
    return false;
  }
  if (err != 0) {
    throw VerbsError(
        fmt::format("qp 0x{:x} on {} port {}: ibv_set_ece(vendor 0x{:x}, options 0x{:x}, "
                    "comp_mask 0x{:x}) failed: {}; set NCCL_IB_ECE_ENABLE=0 on the sender to "
                    "connect without ECE",
                    qp_->qp_num, pd_->context()->name(), port_, ece.vendor_id, ece.options,
                    ece.comp_mask, errno_text(err)),
        err);
  }
  return true;
}

uint8_t QueuePair::query_traffic_class() const {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  errno = 0;
  const int err = verbs_errno(pd_->context()->lib().fn().query_qp(qp_, &attr, IBV_QP_AV, &init));
  if (err != 0) {
    throw VerbsError(fmt::format("qp 0x{:x} on {} port {}: ibv_query_qp failed: {}; the traffic "
                                 "class cannot be verified",
                                 qp_->qp_num, pd_->context()->name(), port_, errno_text(err)),
                     err);
  }
  return attr.ah_attr.grh.traffic_class;
}

std::optional<ibv_event_type> QueuePair::fatal_event() const noexcept {
  const int event = fatal_event_.load(std::memory_order_acquire);
  if (event < 0) {
    return std::nullopt;
  }
  return static_cast<ibv_event_type>(event);
}

QueuePair* QueuePair::from_ibv(const ibv_qp* qp) noexcept {
  if (qp == nullptr || qp->qp_context == nullptr) {
    return nullptr;
  }
  auto* wrapper = static_cast<QueuePair*>(qp->qp_context);
  return wrapper->magic_ == kMagic && wrapper->qp_ == qp ? wrapper : nullptr;
}

void QueuePair::drain() noexcept {
  using Clock = std::chrono::steady_clock;
  const uint64_t send_id = reinterpret_cast<uintptr_t>(&send_marker_);
  const uint64_t recv_id = reinterpret_cast<uintptr_t>(&recv_marker_);

  // In ERR every request completes in order with a flush status, so once a marker posted now
  // comes back, everything posted before it has been flushed.
  ibv_recv_wr recv_wr{};
  recv_wr.wr_id = recv_id;
  ibv_recv_wr* bad_recv = nullptr;
  bool recv_pending = post_recv(&recv_wr, &bad_recv) == 0;
  ibv_send_wr send_wr{};
  send_wr.wr_id = send_id;
  send_wr.opcode = IBV_WR_SEND;
  send_wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad_send = nullptr;
  bool send_pending = post_send(&send_wr, &bad_send) == 0;
  // A queue that refused its marker (some devices reject posts in ERR) is taken as flushed once
  // nothing has completed for a while.
  const bool wait_quiet = !recv_pending || !send_pending;

  CompletionQueue* cqs[2] = {send_cq_.get(),
                             recv_cq_.get() != send_cq_.get() ? recv_cq_.get() : nullptr};
  const auto start = Clock::now();
  auto last_seen = start;
  int flushed = 0;
  ibv_wc wc[16];
  for (;;) {
    int got = 0;
    for (CompletionQueue* cq : cqs) {
      if (cq == nullptr) {
        continue;
      }
      const int n = cq->poll_device(16, wc);
      if (n < 0) {
        ROCE_WARN(NCCL_NET, "qp 0x{:x} on {}: polling cq {} failed while draining", qp_->qp_num,
                  pd_->context()->name(), cq->id());
        return;
      }
      for (int i = 0; i < n; ++i) {
        if (wc[i].qp_num != qp_->qp_num) {
          cq->defer(wc[i]);
        } else if (wc[i].wr_id == send_id) {
          send_pending = false;
        } else if (wc[i].wr_id == recv_id) {
          recv_pending = false;
        } else {
          ++flushed;
        }
      }
      got += n;
    }
    const auto now = Clock::now();
    if (got > 0) {
      last_seen = now;
    }
    if (!recv_pending && !send_pending && (!wait_quiet || now - last_seen >= kDrainQuietPeriod)) {
      break;
    }
    if (now - start >= kDrainTimeout) {
      ROCE_WARN(NCCL_NET,
                "qp 0x{:x} on {}: the device did not flush the queue within {} ms; destroying it "
                "anyway",
                qp_->qp_num, pd_->context()->name(),
                std::chrono::duration_cast<std::chrono::milliseconds>(kDrainTimeout).count());
      break;
    }
    if (got == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  if (flushed > 0) {
    ROCE_TRACE(NCCL_NET, "qp 0x{:x}: {} outstanding requests flushed", qp_->qp_num, flushed);
  }
}

}  // namespace roce::verbs
