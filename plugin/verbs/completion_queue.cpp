// Completion queue lifetime and deferred completions: see completion_queue.h.
#include "verbs/completion_queue.h"

#include <cerrno>

#include "util/log.h"
#include "verbs/error.h"

namespace roce::verbs {
namespace {
std::atomic<uint32_t> next_cq_id{1};
}  // namespace

std::shared_ptr<CompletionQueue> CompletionQueue::create(std::shared_ptr<Context> context,
                                                         int min_entries) {
  const int max_cqe = context->device_attr().max_cqe;
  if (min_entries < 1 || min_entries > max_cqe) {
    throw VerbsError(fmt::format("dev {}: a CQ of {} entries is outside the device's range "
                                 "1..{} (max_cqe)",
                                 context->name(), min_entries, max_cqe),
                     EINVAL);
  }
  errno = 0;
  // cq_context is set once the wrapper exists; no event can arrive before then.
  ibv_cq* cq = context->lib().fn().create_cq(context->get(), min_entries, nullptr, nullptr, 0);
  if (cq == nullptr) {
    const int err = errno != 0 ? errno : ENOMEM;
    throw VerbsError(fmt::format("dev {}: ibv_create_cq of {} entries failed: {}", context->name(),
                                 min_entries, errno_text(err)),
                     err);
  }
  std::shared_ptr<CompletionQueue> wrapper(
      new CompletionQueue(std::move(context), cq, next_cq_id.fetch_add(1)));
  cq->cq_context = wrapper.get();
  return wrapper;
}

CompletionQueue::~CompletionQueue() {
  if (!deferred_.empty()) {
    ROCE_INFO(NCCL_NET, "cq {} on {}: {} completions of destroyed queue pairs were never polled",
              id_, context_->name(), deferred_.size());
  }
  errno = 0;
  const int err = verbs_errno(context_->lib().fn().destroy_cq(cq_));
  if (err != 0) {
    ROCE_WARN(NCCL_NET, "cq {} on {}: ibv_destroy_cq failed: {}{}", id_, context_->name(),
              errno_text(err), err == EBUSY ? "; queue pairs using it are still alive" : "");
  }
  magic_ = 0;
}

std::optional<ibv_event_type> CompletionQueue::fatal_event() const noexcept {
  const int event = fatal_event_.load(std::memory_order_acquire);
  if (event < 0) {
    return std::nullopt;
  }
  return static_cast<ibv_event_type>(event);
}

CompletionQueue* CompletionQueue::from_ibv(const ibv_cq* cq) noexcept {
  if (cq == nullptr || cq->cq_context == nullptr) {
    return nullptr;
  }
  auto* wrapper = static_cast<CompletionQueue*>(cq->cq_context);
  return wrapper->magic_ == kMagic && wrapper->cq_ == cq ? wrapper : nullptr;
}

int CompletionQueue::take_deferred(int max, ibv_wc* wc) noexcept {
  int taken = 0;
  while (taken < max && !deferred_.empty()) {
    wc[taken++] = deferred_.front();
    deferred_.pop_front();
  }
  has_deferred_ = !deferred_.empty();
  return taken;
}

}  // namespace roce::verbs
