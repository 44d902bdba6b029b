// Completion queues and completion channels. The progress thread pushes completions; any
// application thread polls them. A push after the data it reports is written makes the data
// visible to whoever polls the completion (the ring's mutex orders both). An armed CQ raises one
// event on its channel; a full CQ loses the completion and raises IBV_EVENT_CQ_ERR, as a NIC's
// overrun does.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace vroce::device {
struct Context;
}  // namespace vroce::device

namespace vroce::core {

struct Cq;
class DeviceState;

struct CompChannel {
  // ibv.fd: a semaphore eventfd holding one unit per queued event, written after the event is
  // queued and read by whoever takes it, so the fd is readable while events wait.
  ibv_comp_channel ibv{};  // first member
  device::Context* ctx = nullptr;
  std::mutex mutex;
  std::deque<Cq*> events;        // guarded by mutex
  std::atomic<uint32_t> cqs{0};  // CQs bound to this channel

  // Queues an event for `cq` and makes the fd readable: queue(), then signal(), the write after
  // the mutex is released, so the waiter it wakes does not find the poster still holding it.
  void post(Cq* cq) {
    queue(cq);
    signal();
  }
  void queue(Cq* cq);
  void signal();
  // Takes the oldest event and counts it in the CQ's events_delivered; blocks unless the fd is
  // O_NONBLOCK. 0, or -1 with errno set.
  int get(Cq** cq);
  // Drops the events of a CQ being destroyed; returns how many.
  uint32_t discard(const Cq* cq);

 private:
  // Reads the unit of one event taken from the queue; its poster may not have written it yet.
  void take_signal();
};

inline CompChannel* to_channel(ibv_comp_channel* channel) noexcept {
  return reinterpret_cast<CompChannel*>(channel);
}

struct Cq {
  ibv_cq ibv{};  // first member: users hold &ibv
  device::Context* ctx = nullptr;
  DeviceState* device = nullptr;  // whose engine an idle poller may drive
  CompChannel* channel = nullptr;
  std::atomic<uint32_t> qps{0};  // QPs using this CQ (send or receive)

  // Sets the ring to hold at least `cqe` completions; ibv.cqe reports the capacity. Fails with
  // EINVAL when fewer completions than are queued would fit.
  int resize(int cqe);

  // Adds a completion; returns false (and drops it) when the ring is full. `solicited` marks a
  // receive completion of a message sent with IBV_SEND_SOLICITED.
  bool push(const ibv_wc& wc, bool solicited);

  // Moves up to n completions into wc; returns how many.
  int poll(int n, ibv_wc* wc);

  // Arms the CQ for one event: the next completion, or with solicited_only the next solicited
  // or error completion.
  void arm(bool solicited_only);

  // True once an overrun lost a completion; the async event has been raised.
  bool overrun() const noexcept { return overrun_.load(std::memory_order_relaxed); }

  // Events delivered through ibv_get_cq_event, compared with ibv.comp_events_completed by
  // ibv_destroy_cq (both under ibv.mutex).
  uint32_t events_delivered = 0;

 private:
  std::mutex mutex_;
  std::vector<ibv_wc> ring_;        // power-of-two size
  uint32_t head_ = 0;               // guarded by mutex_
  uint32_t capacity_ = 0;           // usable entries; guarded by mutex_
  std::atomic<uint32_t> count_{0};  // written under mutex_, read without it for the empty check
  bool armed_ = false;              // guarded by mutex_
  bool solicited_only_ = false;
  std::atomic<bool> overrun_{false};
};

inline Cq* to_cq(ibv_cq* cq) noexcept {
  return reinterpret_cast<Cq*>(cq);
}

}  // namespace vroce::core
