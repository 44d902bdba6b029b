// AsyncEventQueue; see async_event_queue.h.
//
// The eventfd is a level signal, not a count: it holds 1 while the queue is non-empty and some
// get() has not yet consumed the signal. A get() reads (consumes) it, takes one event under the
// lock and re-arms it if events remain, so one event wakes one waiter and the next waiter is woken
// by the re-arm. This keeps poll() readiness equal to "an event is queued", except after retire()
// drops the last queued event while armed; then one get() finds the queue empty, consumes the
// stale signal and waits again (or returns EAGAIN), which callers cannot tell from a spurious
// poll wakeup.
#include "device/async_event_queue.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vroce::device {

Result<std::unique_ptr<AsyncEventQueue>> AsyncEventQueue::create() {
  int fd = eventfd(0, EFD_CLOEXEC);
  if (fd < 0) {
    return failure(std::string("cannot create the async event fd: ") + std::strerror(errno));
  }
  return std::unique_ptr<AsyncEventQueue>(new AsyncEventQueue(fd));
}

AsyncEventQueue::~AsyncEventQueue() {
  close(fd_);
}

const void* AsyncEventQueue::object_of(const ibv_async_event& event) noexcept {
  switch (event.event_type) {
    case IBV_EVENT_CQ_ERR:
      return event.element.cq;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return event.element.qp;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return event.element.srq;
    case IBV_EVENT_WQ_FATAL:
      return event.element.wq;
    default:
      return nullptr;  // port events carry a port number; device events nothing
  }
}

void AsyncEventQueue::signal_locked() {
  if (signaled_) {
    return;
  }
  uint64_t one = 1;
  // Cannot fail short of a closed fd: the counter never nears its limit (it is 0 or 1 here).
  if (write(fd_, &one, sizeof(one)) == static_cast<ssize_t>(sizeof(one))) {
    signaled_ = true;
  }
}

void AsyncEventQueue::push(const ibv_async_event& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(event);
  signal_locked();
}

int AsyncEventQueue::get(ibv_async_event* event) {
  while (true) {
    uint64_t value = 0;
    if (read(fd_, &value, sizeof(value)) != static_cast<ssize_t>(sizeof(value))) {
      return errno == 0 ? EIO : errno;  // EAGAIN on a non-blocking fd, EINTR on a signal
    }
    std::lock_guard<std::mutex> lock(mutex_);
    signaled_ = false;
    if (queue_.empty()) {
      continue;  // the stale signal described above
    }
    *event = queue_.front();
    queue_.pop_front();
    if (const void* object = object_of(*event)) {
      ++counts_[object].delivered;
    }
    if (!queue_.empty()) {
      signal_locked();
    }
    return 0;
  }
}

void AsyncEventQueue::ack(const ibv_async_event& event) {
  const void* object = object_of(event);
  if (object == nullptr) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = counts_.find(object);
  if (it != counts_.end() && it->second.acked < it->second.delivered) {
    ++it->second.acked;
    acked_cv_.notify_all();
  }
}

void AsyncEventQueue::retire(const void* object) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::erase_if(queue_, [object](const ibv_async_event& e) { return object_of(e) == object; });
  acked_cv_.wait(lock, [&] {
    auto it = counts_.find(object);
    return it == counts_.end() || it->second.acked >= it->second.delivered;
  });
  counts_.erase(object);
}

void AsyncEventQueue::abandon_acks() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [object, counts] : counts_) {
    counts.acked = counts.delivered;
  }
  acked_cv_.notify_all();
}

size_t AsyncEventQueue::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

}  // namespace vroce::device
