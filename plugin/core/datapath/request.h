// Requests handed to NCCL by isend, irecv and iflush. They live in fixed pools inside their comm
// (no allocation on the data path) and start with a header that test() checks and dispatches on.
// A request is Pending from its post until its completions arrive, Done until NCCL's test() sees
// it, then Free again.
#pragma once

#include <array>
#include <cstdint>

#include "core/datapath/data_path_limits.h"
#include "telemetry/profiler_events.h"

namespace roce {

class Comm;

enum class RequestKind : uint8_t { Send = 1, Recv = 2, Flush = 3 };
enum class RequestState : uint8_t { Free = 0, Pending = 1, Done = 2 };

struct RequestHeader {
  static constexpr uint32_t kMagic = 0x72657121;  // "req!"
  uint32_t magic = kMagic;
  RequestKind kind = RequestKind::Send;
  RequestState state = RequestState::Free;
  uint16_t index = 0;  // slot in the owning pool
  Comm* comm = nullptr;
};

// One isend. The request that matched entry 0 of a multi-receive leads the group: the group's
// signaled completions carry its index, and it lists the members to complete with it.
struct MrHandle;

struct SendRequest : RequestHeader {
  uint32_t size = 0;
  // The buffer, kept only where the work requests are built from the request after isend
  // (multi-receives, split messages, adaptive routing; SendComm::set_buffer).
  uint32_t lkey = 0;
  uint64_t addr = 0;
  bool host_memory = true;    // may be posted inline (the CPU reads it at post time)
  uint64_t posted_ticks = 0;  // when isend took it (telemetry)
  // The message's sequence and the buffer's handle: a recovery epoch posts the send again,
  // through another member's key when its member left.
  uint64_t seq = 0;
  const MrHandle* mh = nullptr;
  telemetry::ProfilerEvent event;
  uint8_t group_count = 0;                    // lead only: n
  uint8_t remaining_qps = 0;                  // lead only: signaled completions still to come
  std::array<uint16_t, kMaxRecvs> members{};  // lead only
};

// One irecv of n buffers.
struct RecvRequest : RequestHeader {
  uint64_t seq = 0;  // the message's sequence number: its receive completions are matched by it
  uint8_t count = 0;
  uint8_t remaining_qps = 0;                 // WRITE WITH IMMEDIATE completions still to come
  std::array<uint32_t, kMaxRecvs> posted{};  // buffer sizes, to check what the peer reports
  // Each buffer's handle (null for an empty one): a recovery epoch rewrites the clear-to-send
  // entries with the keys of the member that carries the message from then on.
  std::array<const MrHandle*, kMaxRecvs> mhs{};
  std::array<int32_t, kMaxRecvs> received{};
  uint64_t posted_ticks = 0;  // when irecv posted it (telemetry)
  bool profiled = false;      // events were started; false again once they are stopped
  std::array<telemetry::ProfilerEvent, kMaxRecvs> events{};  // one per buffer with a phandle
};

// One iflush: a READ on the flush QP of every member of a virtual NIC (one for a port).
struct FlushRequest : RequestHeader {
  uint8_t remaining = 0;  // flush READs not yet completed
};

// The pending request of a pool posted first (telemetry's stall checks; a cold path that scans
// the whole pool), or nullptr.
template <typename Pool>
auto* oldest_pending(Pool& pool) noexcept {
  decltype(&pool[0]) oldest = nullptr;
  for (uint16_t i = 0; i < pool.capacity(); ++i) {
    auto& r = pool[i];
    if (r.state == RequestState::Pending &&
        (oldest == nullptr || r.posted_ticks < oldest->posted_ticks)) {
      oldest = &r;
    }
  }
  return oldest;
}

}  // namespace roce
