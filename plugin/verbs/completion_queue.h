// A completion queue (ibv_cq), holding its Context. poll() is the data path's way in: it goes
// straight through the context's ops table (no exported symbol, no lock); completions of other
// queue pairs that a QueuePair teardown had to read while draining its own are handed back
// first. The async-event thread marks a CQ that reported IBV_EVENT_CQ_ERR so the data path can
// fail instead of waiting forever.
//
// Not thread-safe: one thread polls a CQ at a time, and queue pairs on it are destroyed by that
// same thread (or while nobody polls).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "verbs/context.h"

namespace roce::verbs {

class CompletionQueue {
 public:
  // A CQ of at least min_entries entries. Throws VerbsError naming device, size and errno.
  static std::shared_ptr<CompletionQueue> create(std::shared_ptr<Context> context, int min_entries);
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  ibv_cq* get() const noexcept { return cq_; }
  int capacity() const noexcept { return cq_->cqe; }
  const std::shared_ptr<Context>& context() const noexcept { return context_; }
  // A small number unique in the process, for logs ("cq 3 on vroce0").
  uint32_t id() const noexcept { return id_; }

  // Up to `max` completions into wc; returns their count, or a negative value when the
  // provider reports a polling error (the CQ is then unusable).
  int poll(int max, ibv_wc* wc) noexcept {
    if (has_deferred_) [[unlikely]] {
      return take_deferred(max, wc);
    }
    return cq_->context->ops.poll_cq(cq_, max, wc);
  }

  // Set by the async-event thread (IBV_EVENT_CQ_ERR); read by the data path.
  void mark_fatal(ibv_event_type event) noexcept {
    fatal_event_.store(static_cast<int>(event), std::memory_order_release);
  }
  bool has_fatal_event() const noexcept {
    return fatal_event_.load(std::memory_order_acquire) >= 0;
  }
  std::optional<ibv_event_type> fatal_event() const noexcept;

  // The CompletionQueue behind an ibv_cq this layer created (through cq_context), else nullptr.
  static CompletionQueue* from_ibv(const ibv_cq* cq) noexcept;

 private:
  friend class QueuePair;  // draining hands other QPs' completions back through defer()

  CompletionQueue(std::shared_ptr<Context> context, ibv_cq* cq, uint32_t id)
      : context_(std::move(context)), cq_(cq), id_(id) {}
  int poll_device(int max, ibv_wc* wc) noexcept { return cq_->context->ops.poll_cq(cq_, max, wc); }
  void defer(const ibv_wc& wc) {
    deferred_.push_back(wc);
    has_deferred_ = true;
  }
  int take_deferred(int max, ibv_wc* wc) noexcept;

  static constexpr uint64_t kMagic = 0x726f63652d637121;  // "roce-cq!"
  uint64_t magic_ = kMagic;
  std::shared_ptr<Context> context_;
  ibv_cq* cq_;
  uint32_t id_;
  std::atomic<int> fatal_event_{-1};
  std::deque<ibv_wc> deferred_;
  // !deferred_.empty(), kept as a flag: poll() looks at it every time, and a deque's empty()
  // compares two of its iterators' members.
  bool has_deferred_ = false;
};

}  // namespace roce::verbs
