// Combined CUDA copies; see core/device_copies.h.
#include "core/device_copies.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/protocol.h"
#include "core/qp.h"
#include "gpu/memory.h"
#include "stats/stats.h"
#include "util/log.h"

namespace vroce::core {
namespace {

int copy_now(uint64_t where, const void* src, size_t length) noexcept {
  stats().cuda_copies_to_device.add();
  stats().cuda_copy_bytes.add(length);
  return gpu::copy_to_region(gpu::MemoryKind::Cuda, where, src, length);
}

int read_now(uint64_t where, void* dst, size_t length) noexcept {
  stats().cuda_copies_from_device.add();
  stats().cuda_copy_bytes.add(length);
  return gpu::copy_from_region(gpu::MemoryKind::Cuda, where, dst, length);
}

// The writes one thread has queued: one run of bytes for one QP in one region.
struct PendingWrite {
  Qp* owner = nullptr;
  MrRef ref;  // keeps the region registered until the copy is made
  uint64_t start = 0;
  size_t length = 0;
  std::vector<uint8_t> bytes;  // kDeviceCopyBatchBytes once allocated
};

PendingWrite& pending() {
  thread_local PendingWrite instance;
  return instance;
}

// Threads holding queued writes. flush_device_writes() runs before every packet leaves and every
// completion, mostly with nothing queued anywhere; this spares those calls the thread-local
// lookup (__tls_get_addr in a shared object).
std::atomic<int> threads_with_writes{0};

// A copy into device memory failed after its packets were accepted: the QP cannot go on.
void fail_owner(Qp& qp, int error) {
  VROCE_LOG(Error, "QP 0x%x: copying %s into CUDA memory failed; the QP moves to the error state",
            qp.ibv.qp_num, std::strerror(error));
  fail_qp_fatally(qp);
}

std::vector<uint8_t>& read_ahead_buffer() {
  thread_local std::vector<uint8_t> buffer;
  return buffer;
}

}  // namespace

void queue_device_write(Qp& owner, MrRef ref, uint64_t where, std::span<const uint8_t> data) {
  if (data.empty()) {
    return;
  }
  PendingWrite& p = pending();
  const bool continues = p.length > 0 && p.owner == &owner && p.ref.get() == ref.get() &&
                         where == p.start + p.length &&
                         p.length + data.size() <= kDeviceCopyBatchBytes;
  if (!continues) {
    flush_device_writes();
  }
  if (data.size() > kDeviceCopyBatchBytes) {  // larger than any packet: never combined
    if (int rc = copy_now(where, data.data(), data.size()); rc != 0) {
      fail_owner(owner, rc);
    }
    return;
  }
  if (p.bytes.size() < kDeviceCopyBatchBytes) {
    try {
      p.bytes.resize(kDeviceCopyBatchBytes);
    } catch (...) {  // no memory to combine into: copy this one at once
      if (int rc = copy_now(where, data.data(), data.size()); rc != 0) {
        fail_owner(owner, rc);
      }
      return;
    }
  }
  if (p.length == 0) {
    p.owner = &owner;
    p.ref = std::move(ref);
    p.start = where;
    threads_with_writes.fetch_add(1, std::memory_order_relaxed);
  }
  std::memcpy(p.bytes.data() + p.length, data.data(), data.size());
  p.length += data.size();
}

void flush_device_writes() noexcept {
  // Relaxed is enough: a thread only ever flushes what it queued itself, and its own increment
  // is visible to it.
  if (threads_with_writes.load(std::memory_order_relaxed) == 0) {
    return;
  }
  PendingWrite& p = pending();
  if (p.length == 0) {
    return;
  }
  if (int rc = copy_now(p.start, p.bytes.data(), p.length); rc != 0) {
    fail_owner(*p.owner, rc);
  }
  p.length = 0;
  p.owner = nullptr;
  p.ref = MrRef();
  threads_with_writes.fetch_sub(1, std::memory_order_relaxed);
}

int DeviceReadAhead::read(uint64_t where, void* dst, size_t length, size_t available) noexcept {
  // What this thread wrote and has not copied yet must be in device memory before it is read.
  flush_device_writes();
  if (valid_ && where >= start_ && length <= length_ && where - start_ <= length_ - length) {
    std::memcpy(dst, read_ahead_buffer().data() + (where - start_), length);
    return 0;
  }
  valid_ = false;
  std::vector<uint8_t>& buffer = read_ahead_buffer();
  const size_t want = std::max(length, std::min(available, kDeviceCopyBatchBytes));
  if (buffer.size() < want) {
    try {
      buffer.resize(std::max(want, kDeviceCopyBatchBytes));
    } catch (...) {  // no memory to read ahead into: this piece alone
      return read_now(where, dst, length);
    }
  }
  if (int rc = read_now(where, buffer.data(), want); rc != 0) {
    return rc;
  }
  start_ = where;
  length_ = want;
  valid_ = true;
  std::memcpy(dst, buffer.data(), length);
  return 0;
}

int copy_to_device(uint64_t where, const void* src, size_t length) noexcept {
  flush_device_writes();
  return copy_now(where, src, length);
}

int copy_from_device(uint64_t where, void* dst, size_t length) noexcept {
  flush_device_writes();
  return read_now(where, dst, length);
}

}  // namespace vroce::core
