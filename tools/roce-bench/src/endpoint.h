// What the point-to-point benchmarks (pingpong, bw, bibw) run on: a connection to one peer with
// a send buffer and a receive buffer, each cut into slots for the messages in flight, implemented
// over the plugin (PluginEndpoint) and over raw verbs (RawEndpoint), so both paths run the very
// same loops. Slot i of a size-S message starts at i * slot_stride(S) on both sides.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

#include "buffer.h"

namespace roce::bench {

// One posted operation. Owned by the caller; reused after test() says done.
struct Ticket {
  enum class State { Idle, Pending, Flushing, Done };
  State state = State::Idle;
  void* handle = nullptr;  // plugin request, or raw work-request slot
  void* flush = nullptr;   // plugin iflush request
  int slot = -1;
  std::size_t bytes = 0;
  bool recv = false;
};

inline std::size_t slot_stride(std::size_t bytes) {
  return (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64;
}

// Where slot `slot` of a size-`bytes` message starts in a send or receive buffer.
inline std::size_t slot_offset(int slot, std::size_t bytes) {
  return static_cast<std::size_t>(slot) * slot_stride(bytes);
}

// Messages of `bytes` that fit in flight: the window, capped by the buffer capacity.
inline int slots_for(std::size_t capacity, std::size_t bytes, int window) {
  const std::size_t fit = capacity / slot_stride(bytes);
  return static_cast<int>(std::clamp<std::size_t>(fit, 1, static_cast<std::size_t>(window)));
}

// Per-direction buffer size for the largest message and a window: every slot when that stays
// under 128 MiB, else as many as fit (at least one).
inline std::size_t endpoint_capacity(std::size_t max_bytes, int window) {
  constexpr std::size_t kBudget = std::size_t{128} << 20;
  const std::size_t all = slot_stride(max_bytes) * static_cast<std::size_t>(window);
  return std::max(slot_stride(max_bytes), std::min(all, kBudget));
}

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual std::string_view label() const = 0;  // "plugin" or "raw"
  virtual std::size_t capacity() const = 0;    // bytes per direction
  virtual Buffer& send_buffer() = 0;
  virtual Buffer& recv_buffer() = 0;

  // Posts `bytes` from send slot `slot` to the peer's receive slot of the same index (the peer
  // posts its receives in the same slot order and with the same size). false: cannot post now, test
  // something and retry.
  virtual bool post_send(int slot, std::size_t bytes, Ticket& ticket) = 0;
  virtual bool post_recv(int slot, std::size_t bytes, Ticket& ticket) = 0;
  // True once finished; for a receive, the data is then in recv_buffer (flushed where needed)
  // and its size has been checked against `bytes`.
  virtual bool test(Ticket& ticket) = 0;

  // How many receives a stream keeps posted for a window of sends. The plugin's receiver-driven
  // protocol needs no more than the window; raw RC without clear-to-send needs receive WQEs
  // ahead of the sender, or a slow poll costs an RNR NAK and its timer.
  virtual int receive_depth(int window) const { return window; }

  // A timed region begins (true) or ends (false): the plugin endpoint counts its calls there.
  virtual void timed_region(bool /*begin*/) {}
};

}  // namespace roce::bench
