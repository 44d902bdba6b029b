// The async-event thread: see async_events.h.
#include "core/device/async_events.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <vector>

#include "util/log.h"
#include "verbs/completion_queue.h"
#include "verbs/error.h"
#include "verbs/queue_pair.h"

namespace roce {

namespace {

// Every monitor of the process: a port's event moves them all on, so that a comm on a virtual
// NIC, which looks only at its first member's monitor, sees a member's port come back (a
// recovery epoch's rejoin) at its next call. Port events are rare; each costs every comm one
// health check. Never destroyed: monitors may outlive the static destructors of this file (the
// plugin's own static goes at exit, after them).
struct MonitorRegistry {
  std::mutex mutex;
  std::vector<AsyncEventMonitor*> monitors;
};
MonitorRegistry& monitor_registry() {
  static auto* registry = new MonitorRegistry;
  return *registry;
}

void nudge_all_monitors() {
  MonitorRegistry& registry = monitor_registry();
  const std::lock_guard lock(registry.mutex);
  for (AsyncEventMonitor* monitor : registry.monitors) {
    monitor->nudge_checks();
  }
}

}  // namespace
namespace {

enum class Element { Device, Port, Qp, Cq, Srq, Wq };

Element element_of(ibv_event_type type) noexcept {
  switch (type) {
    case IBV_EVENT_CQ_ERR:
      return Element::Cq;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return Element::Qp;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
      return Element::Port;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return Element::Srq;
    case IBV_EVENT_WQ_FATAL:
      return Element::Wq;
    case IBV_EVENT_DEVICE_FATAL:
      break;
  }
  return Element::Device;
}

}  // namespace

bool is_fatal_async_event(ibv_event_type type) noexcept {
  switch (type) {
    case IBV_EVENT_DEVICE_FATAL:
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
      return true;
    default:
      return false;
  }
}

std::string async_event_name(ibv_event_type type) {
  switch (type) {
    case IBV_EVENT_CQ_ERR:
      return "IBV_EVENT_CQ_ERR";
    case IBV_EVENT_QP_FATAL:
      return "IBV_EVENT_QP_FATAL";
    case IBV_EVENT_QP_REQ_ERR:
      return "IBV_EVENT_QP_REQ_ERR";
    case IBV_EVENT_QP_ACCESS_ERR:
      return "IBV_EVENT_QP_ACCESS_ERR";
    case IBV_EVENT_COMM_EST:
      return "IBV_EVENT_COMM_EST";
    case IBV_EVENT_SQ_DRAINED:
      return "IBV_EVENT_SQ_DRAINED";
    case IBV_EVENT_PATH_MIG:
      return "IBV_EVENT_PATH_MIG";
    case IBV_EVENT_PATH_MIG_ERR:
      return "IBV_EVENT_PATH_MIG_ERR";
    case IBV_EVENT_DEVICE_FATAL:
      return "IBV_EVENT_DEVICE_FATAL";
    case IBV_EVENT_PORT_ACTIVE:
      return "IBV_EVENT_PORT_ACTIVE";
    case IBV_EVENT_PORT_ERR:
      return "IBV_EVENT_PORT_ERR";
    case IBV_EVENT_LID_CHANGE:
      return "IBV_EVENT_LID_CHANGE";
    case IBV_EVENT_PKEY_CHANGE:
      return "IBV_EVENT_PKEY_CHANGE";
    case IBV_EVENT_SM_CHANGE:
      return "IBV_EVENT_SM_CHANGE";
    case IBV_EVENT_SRQ_ERR:
      return "IBV_EVENT_SRQ_ERR";
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return "IBV_EVENT_SRQ_LIMIT_REACHED";
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return "IBV_EVENT_QP_LAST_WQE_REACHED";
    case IBV_EVENT_CLIENT_REREGISTER:
      return "IBV_EVENT_CLIENT_REREGISTER";
    case IBV_EVENT_GID_CHANGE:
      return "IBV_EVENT_GID_CHANGE";
    case IBV_EVENT_WQ_FATAL:
      return "IBV_EVENT_WQ_FATAL";
  }
  return fmt::format("IBV_EVENT_{}", static_cast<int>(type));
}

AsyncEventMonitor::AsyncEventMonitor(std::shared_ptr<verbs::Context> context,
                                     std::chrono::milliseconds check_interval)
    : context_(std::move(context)), check_interval_(check_interval) {
  const int async_fd = context_->get()->async_fd;
  const int flags = fcntl(async_fd, F_GETFL);
  if (flags < 0 || fcntl(async_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    const int err = errno;
    throw verbs::VerbsError(fmt::format("dev {}: cannot make the async event fd {} non-blocking: "
                                        "{}",
                                        context_->name(), async_fd, verbs::errno_text(err)),
                            err);
  }
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) {
    const int err = errno;
    throw verbs::VerbsError(fmt::format("dev {}: eventfd for the async event thread failed: {}",
                                        context_->name(), verbs::errno_text(err)),
                            err);
  }
  {
    MonitorRegistry& registry = monitor_registry();
    const std::lock_guard lock(registry.mutex);
    registry.monitors.push_back(this);
  }
  thread_ = std::thread([this] { run(); });
}

AsyncEventMonitor::~AsyncEventMonitor() {
  {
    MonitorRegistry& registry = monitor_registry();
    const std::lock_guard lock(registry.mutex);
    auto& monitors = registry.monitors;
    monitors.erase(std::remove(monitors.begin(), monitors.end(), this), monitors.end());
  }
  stop();
  if (stop_fd_ >= 0) {
    close(stop_fd_);
  }
}

void AsyncEventMonitor::stop() noexcept {
  if (!thread_.joinable()) {
    return;
  }
  const uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof(one)) != static_cast<ssize_t>(sizeof(one))) {
    ROCE_WARN(NCCL_INIT, "dev {}: cannot signal the async event thread to stop: {}",
              context_->name(), verbs::errno_text(errno));
  }
  thread_.join();
}

bool AsyncEventMonitor::wait_for_events(uint64_t count, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (events_seen() < count) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void AsyncEventMonitor::run() noexcept {
  const ibv::Functions& fn = context_->lib().fn();
  pollfd fds[2] = {{context_->get()->async_fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  const int timeout_ms =
      check_interval_.count() > 0 ? static_cast<int>(check_interval_.count()) : -1;
  for (;;) {
    const int ready = poll(fds, 2, timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      ROCE_WARN(NCCL_INIT,
                "dev {}: async event thread: poll failed: {}; no more events will be "
                "reported for this device",
                context_->name(), verbs::errno_text(errno));
      return;
    }
    if (fds[1].revents != 0) {
      return;
    }
    if (ready == 0) {  // an interval without events: time for the comms' periodic checks
      checks_due_.fetch_add(1, std::memory_order_acq_rel);
      continue;
    }
    if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
      ROCE_WARN(NCCL_INIT,
                "dev {}: the async event fd reported an error (revents 0x{:x}); no "
                "more events will be reported for this device",
                context_->name(), static_cast<unsigned>(fds[0].revents));
      return;
    }
    if ((fds[0].revents & POLLIN) == 0) {
      continue;
    }
    for (;;) {
      ibv_async_event event{};
      errno = 0;
      if (fn.get_async_event(context_->get(), &event) != 0) {
        if (errno != EAGAIN && errno != EINTR) {
          ROCE_WARN(NCCL_INIT, "dev {}: ibv_get_async_event failed: {}", context_->name(),
                    verbs::errno_text(errno != 0 ? errno : EIO));
        }
        break;
      }
      try {
        handle(event);
      } catch (const std::exception& e) {
        ROCE_WARN(NCCL_INIT, "dev {}: could not record async event {}: {}", context_->name(),
                  static_cast<int>(event.event_type), e.what());
      }
      fn.ack_async_event(&event);
      events_seen_.fetch_add(1, std::memory_order_acq_rel);
      checks_due_.fetch_add(1, std::memory_order_acq_rel);
    }
  }
}

void AsyncEventMonitor::handle(const ibv_async_event& event) {
  const ibv_event_type type = event.event_type;
  const bool fatal = is_fatal_async_event(type);
  const char* description = context_->lib().fn().event_type_str(type);
  const std::string name = async_event_name(type);
  std::string where;
  switch (element_of(type)) {
    case Element::Port:
      where = fmt::format("port {}", event.element.port_num);
      break;
    case Element::Qp:
      where = event.element.qp != nullptr ? fmt::format("qp 0x{:x}", event.element.qp->qp_num)
                                          : std::string("qp ?");
      if (fatal) {
        if (verbs::QueuePair* qp = verbs::QueuePair::from_ibv(event.element.qp)) {
          qp->mark_fatal(type);
        } else {
          where += " (not created by this plugin)";
        }
      }
      break;
    case Element::Cq:
      if (verbs::CompletionQueue* cq = verbs::CompletionQueue::from_ibv(event.element.cq)) {
        where = fmt::format("cq {}", cq->id());
        cq->mark_fatal(type);
      } else {
        where = "cq (not created by this plugin)";
      }
      break;
    case Element::Srq:
      where = "srq";
      break;
    case Element::Wq:
      where = "wq";
      break;
    case Element::Device:
      where = "device";
      if (type == IBV_EVENT_DEVICE_FATAL) {
        device_fatal_.store(true, std::memory_order_release);
        context_->mark_lost();
      }
      break;
  }
  if (fatal) {
    ROCE_WARN(NCCL_NET, "dev {} {}: async event {} ({}); operations on it now fail",
              context_->name(), where, name, description != nullptr ? description : "?");
  } else if (type == IBV_EVENT_PORT_ERR) {
    // Not fatal, as in NCCL's IB transport: a link flap shorter than the QPs' retry budget is
    // ridden out by RC retransmission; a longer one ends in IBV_WC_RETRY_EXC_ERR on the
    // connections that had traffic in flight, and those fail then, with that error.
    ROCE_WARN(NCCL_NET,
              "dev {} {}: async event {} ({}): the link is down; connections on it retransmit "
              "until it comes back, and fail with IBV_WC_RETRY_EXC_ERR if it stays down longer "
              "than their retry budget (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT); with "
              "NCCL_ROCE_FAILOVER (on by default) they then move to another member of their "
              "NIC, or wait for this port to come back (a bounded wait)",
              context_->name(), where, name, description != nullptr ? description : "?");
    nudge_all_monitors();
  } else if (type == IBV_EVENT_PORT_ACTIVE) {
    ROCE_WARN(NCCL_NET, "dev {} {}: async event {} ({}): the link is up again", context_->name(),
              where, name, description != nullptr ? description : "?");
    nudge_all_monitors();
  } else {
    ROCE_INFO(NCCL_NET, "dev {} {}: async event {} ({})", context_->name(), where, name,
              description != nullptr ? description : "?");
  }
}

}  // namespace roce
