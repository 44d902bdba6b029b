#include "core/cq.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "device/async_events.h"
#include "stats/stats.h"
#include "util/log.h"

namespace vroce::core {

void CompChannel::queue(Cq* cq) {
  std::lock_guard lock(mutex);
  events.push_back(cq);
}

void CompChannel::signal() {
  uint64_t one = 1;
  if (::write(ibv.fd, &one, sizeof(one)) < 0) {
    VROCE_LOG(Error, "completion channel fd %d: write failed: %s", ibv.fd, std::strerror(errno));
  }
}

void CompChannel::take_signal() {
  uint64_t unit;
  while (::read(ibv.fd, &unit, sizeof(unit)) < 0) {
    if (errno == EAGAIN) {
      // The program made the fd O_NONBLOCK and the poster is between queue() and signal():
      // its write follows at once, nothing it waits for is held here.
      pollfd pfd{ibv.fd, POLLIN, 0};
      ::poll(&pfd, 1, -1);
    } else if (errno != EINTR) {
      VROCE_LOG(Error, "completion channel fd %d: read failed: %s", ibv.fd, std::strerror(errno));
      return;
    }
  }
}

int CompChannel::get(Cq** cq) {
  for (;;) {
    Cq* taken = nullptr;
    {
      std::lock_guard lock(mutex);
      if (!events.empty()) {
        taken = events.front();
        events.pop_front();
        // Counted while the channel lock is held, so ibv_destroy_cq (which discards the CQ's
        // queued events under the same lock first) sees every event handed out.
        pthread_mutex_lock(&taken->ibv.mutex);
        ++taken->events_delivered;
        pthread_mutex_unlock(&taken->ibv.mutex);
      }
    }
    if (taken != nullptr) {
      // Outside the lock: the read may wait for the poster's signal(), which needs no lock.
      take_signal();
      *cq = taken;
      return 0;
    }
    if ((::fcntl(ibv.fd, F_GETFL) & O_NONBLOCK) != 0) {
      errno = EAGAIN;
      return -1;
    }
    // Readable once a unit is written, which follows every queue(): an event queued after the
    // check above ends this wait.
    pollfd pfd{ibv.fd, POLLIN, 0};
    if (::poll(&pfd, 1, -1) < 0 && errno != EINTR) {
      return -1;
    }
  }
}

uint32_t CompChannel::discard(const Cq* cq) {
  uint32_t removed = 0;
  {
    std::lock_guard lock(mutex);
    auto before = events.size();
    std::erase(events, cq);
    removed = static_cast<uint32_t>(before - events.size());
  }
  for (uint32_t i = 0; i < removed; ++i) {
    take_signal();
  }
  return removed;
}

int Cq::resize(int cqe) {
  if (cqe < 1) {
    return EINVAL;
  }
  std::lock_guard lock(mutex_);
  uint32_t count = count_.load(std::memory_order_relaxed);
  uint32_t wanted = std::max(static_cast<uint32_t>(cqe), count);
  // One slot stays free, as in mlx5, so the reported size is a power of two minus one.
  uint32_t size = std::bit_ceil(wanted + 1);
  if (size - 1 < count) {
    return EINVAL;
  }
  std::vector<ibv_wc> ring(size);
  for (uint32_t i = 0; i < count; ++i) {
    ring[i] = ring_[(head_ + i) & (static_cast<uint32_t>(ring_.size()) - 1)];
  }
  ring_ = std::move(ring);
  head_ = 0;
  capacity_ = size - 1;
  ibv.cqe = static_cast<int>(capacity_);
  return 0;
}

bool Cq::push(const ibv_wc& wc, bool solicited) {
  bool notify = false;
  {
    std::lock_guard lock(mutex_);
    uint32_t count = count_.load(std::memory_order_relaxed);
    if (count >= capacity_) {
      bool first = !overrun_.exchange(true, std::memory_order_relaxed);
      stats().cq_overruns.add();
      if (first) {
        VROCE_LOG(Error,
                  "CQ %p overrun: %u completions queued, none polled; completions are lost from "
                  "now on (create the CQ with more entries or poll it more often)",
                  static_cast<void*>(&ibv), capacity_);
        ibv_async_event event{};
        event.element.cq = &ibv;
        event.event_type = IBV_EVENT_CQ_ERR;
        device::raise_async_event(*ctx, event);
      }
      return false;
    }
    ring_[(head_ + count) & (static_cast<uint32_t>(ring_.size()) - 1)] = wc;
    count_.store(count + 1, std::memory_order_release);
    if (armed_ && (!solicited_only_ || solicited || wc.status != IBV_WC_SUCCESS)) {
      armed_ = false;
      notify = true;
    }
  }
  if (notify && channel != nullptr) {
    channel->post(this);
  }
  return true;
}

int Cq::poll(int n, ibv_wc* wc) {
  if (n <= 0 || count_.load(std::memory_order_acquire) == 0) {
    return 0;
  }
  std::lock_guard lock(mutex_);
  uint32_t count = count_.load(std::memory_order_relaxed);
  uint32_t take = std::min(count, static_cast<uint32_t>(n));
  uint32_t mask = static_cast<uint32_t>(ring_.size()) - 1;
  for (uint32_t i = 0; i < take; ++i) {
    wc[i] = ring_[(head_ + i) & mask];
  }
  head_ = (head_ + take) & mask;
  count_.store(count - take, std::memory_order_release);
  return static_cast<int>(take);
}

void Cq::arm(bool solicited_only) {
  std::lock_guard lock(mutex_);
  armed_ = true;
  solicited_only_ = solicited_only;
}

}  // namespace vroce::core
