// The asynchronous event queue of one context, with the semantics rdma-core documents for
// ibv_get_async_event/ibv_ack_async_event and the kernel gives the async fd:
//  - fd() is the context's async_fd, an eventfd that is readable while events are queued, so a
//    program can poll/epoll it; get() blocks in read(2) on it unless the program set O_NONBLOCK
//    on it (then get() fails with EAGAIN when nothing is queued).
//  - each event is delivered to exactly one of the threads waiting in get().
//  - an event naming a QP, CQ, SRQ or WQ is counted as delivered; ack() counts it as
//    acknowledged; retire() is what destroying such an object does: it drops the object's
//    undelivered events (the kernel does too) and waits until every delivered one is acked.
#pragma once

#include <infiniband/verbs.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "util/result.h"

namespace vroce::device {

class AsyncEventQueue {
 public:
  // A failure when no eventfd can be created (out of descriptors).
  static Result<std::unique_ptr<AsyncEventQueue>> create();
  ~AsyncEventQueue();
  AsyncEventQueue(const AsyncEventQueue&) = delete;
  AsyncEventQueue& operator=(const AsyncEventQueue&) = delete;

  int fd() const noexcept { return fd_; }

  // Queues an event. Thread-safe; never blocks on readers.
  void push(const ibv_async_event& event);

  // Takes the oldest event: 0, or an errno value (EAGAIN for a non-blocking fd with nothing
  // queued, EINTR when a signal interrupted the wait).
  int get(ibv_async_event* event);

  // Acknowledges an event get() returned.
  void ack(const ibv_async_event& event);

  // Drops undelivered events that name object and blocks until all its delivered events are
  // acknowledged. Called by destroy_qp/cq/srq before the object is freed.
  void retire(const void* object);

  // Counts every delivered event as acknowledged (ibv_close_device: the program closed the
  // context, so retire() must not wait for acknowledgements that can no longer come).
  void abandon_acks();

  // Events queued and not yet taken (for tests and diagnostics).
  size_t pending() const;

  // The QP, CQ, SRQ or WQ an event names, or nullptr for port and device events.
  static const void* object_of(const ibv_async_event& event) noexcept;

 private:
  explicit AsyncEventQueue(int fd) : fd_(fd) {}
  void signal_locked();

  struct Counts {
    uint64_t delivered = 0;
    uint64_t acked = 0;
  };

  const int fd_;
  mutable std::mutex mutex_;
  std::condition_variable acked_cv_;
  std::deque<ibv_async_event> queue_;
  std::unordered_map<const void*, Counts> counts_;
  bool signaled_ = false;  // the eventfd holds a count that no get() has consumed yet
};

}  // namespace vroce::device
