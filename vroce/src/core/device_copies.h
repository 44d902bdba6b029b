// Fewer, larger CUDA copies for the packets of one message. A driver copy with its stream
// synchronisation costs about 6 us on an H200 whatever its size up to 64 KiB, so copying each
// 4 KiB packet on its own bounds GPU memory at well under 1 GB/s. A NIC's DMA engine has no such
// fixed cost; vroce approaches it by combining:
// - writes: the payloads of consecutive packets that land back to back in one CUDA region are
//   gathered in host memory and copied in one piece before anything can observe them: before a
//   completion is queued, before any copy out of device memory, and before the engine's pass
//   over the received packets ends (so before their ACKs leave, and before the engine lock is
//   given up);
// - reads: the first packet of a run read from a CUDA region brings over as much of the SGE as
//   the rest of the pass can send, and the following packets are served from that copy. The copy
//   lives for one transmit call of one QP, so it never outlives the WQE it was read for.
// Both run on whichever thread runs the engine, under its lock; the buffers are per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/key_table.h"

namespace vroce::core {

struct Qp;

// At most this much is combined into one copy in either direction.
inline constexpr size_t kDeviceCopyBatchBytes = size_t{256} << 10;

// Queues `data` for CUDA address `where` inside the region `ref` pins (which stays pinned until
// the copy is made). The write joins the pending one when it continues it, in the same region for
// the same QP; otherwise the pending one is copied first. A failed copy is the owning QP's
// fatal error (IBV_EVENT_QP_FATAL, the QP to ERR), as a DMA failure is on a NIC.
void queue_device_write(Qp& owner, MrRef ref, uint64_t where, std::span<const uint8_t> data);

// Copies what queue_device_write() holds for this thread into device memory. Cheap when nothing
// is pending.
void flush_device_writes() noexcept;

// One copy at once, after what this thread has queued (counted in vroce's statistics, as every
// CUDA copy of the engine is). Return 0 or an errno value.
int copy_to_device(uint64_t where, const void* src, size_t length) noexcept;
int copy_from_device(uint64_t where, void* dst, size_t length) noexcept;

// The read-ahead copy of one transmit call.
class DeviceReadAhead {
 public:
  DeviceReadAhead() = default;
  DeviceReadAhead(const DeviceReadAhead&) = delete;
  DeviceReadAhead& operator=(const DeviceReadAhead&) = delete;

  // Copies [where, where + length) of CUDA memory to `dst`: from the read-ahead copy when it
  // covers the range, else after refilling it from `where` with up to `available` bytes (what
  // the SGE or READ holds from there on, at least `length`). Returns 0 or an errno value.
  int read(uint64_t where, void* dst, size_t length, size_t available) noexcept;

 private:
  uint64_t start_ = 0;
  size_t length_ = 0;
  bool valid_ = false;
};

}  // namespace vroce::core
