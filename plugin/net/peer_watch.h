// The peer watch (issue 49): how a comm learns that the process at the other end of its
// connection is gone, off the data path. Each comm keeps its handshake's TCP socket after the
// handshake; one thread per process (started with the first watched socket) waits on all of them
// with epoll and reads what arrives:
//
//   Hello    sent by each side right after the handshake (the sender with its Ready, the
//            receiver once it has read Ready): "I watch, and will say goodbye when I close".
//   Goodbye  sent by a comm's close, just before the socket closes.
//
// A socket that ends (EOF, reset, or the keepalive's timeout) after the peer's Hello but without
// its Goodbye means the peer process is gone: a killed process's kernel closes its sockets with
// a FIN (or a reset) just as a normal close does, so only the Goodbye tells the two apart. The
// watcher then marks the comm's PeerState gone with the reason and calls its nudge, which makes
// the comm's next test() run its health check; the data path itself never looks at the socket.
// A socket that ends before any Hello belongs to a peer that does not watch (an earlier plugin,
// or NCCL_ROCE_PEER_WATCH=0 there): it is dropped and nothing is marked, so either side may have
// the watch without the other.
//
// Frames: the handshake's framing (4-byte length) and header (handshake.h: magic, version,
// kind, body length) with kinds after the handshake's, and a body of the listen nonce (u64), so
// a frame from anything but this connection's peer is refused (the socket is then dropped
// without a mark: a confused peer is not a dead one).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "net/socket.h"

namespace roce::net {

enum class WatchSignal : uint16_t { Hello = 5, Goodbye = 6 };  // after MessageKind's values

// 4-byte frame length, 12-byte handshake header, 8-byte nonce.
inline constexpr size_t kWatchFrameSize = 24;

std::array<uint8_t, kWatchFrameSize> encode_watch_frame(WatchSignal signal, uint64_t nonce);

// Splits the bytes a watched socket delivers into signals; frames may arrive in pieces.
class WatchFrameParser {
 public:
  explicit WatchFrameParser(uint64_t nonce) : nonce_(nonce) {}

  enum class Event { None, Hello, Goodbye, Invalid };
  // Consumes bytes up to and including the next whole frame. *used: how many were consumed.
  // Invalid: not a watch frame of this connection (sticky; *detail says why).
  Event feed(std::span<const uint8_t> bytes, size_t* used, std::string* detail);

 private:
  uint64_t nonce_;
  std::array<uint8_t, kWatchFrameSize> frame_{};
  size_t got_ = 0;
  bool invalid_ = false;
};

// The keepalive of a watched socket for a detection bound of `timeout_s` seconds (a peer host
// that stops answering, with no FIN or reset): TCP_USER_TIMEOUT is the bound; the first probe
// goes after half of it and probes repeat every tenth, so the kernel gives up at the first probe
// past the bound, at most `interval_s` + 1 s later (Linux checks the user timeout when a
// keepalive probe is due).
struct KeepalivePlan {
  int idle_s = 0;      // TCP_KEEPIDLE
  int interval_s = 0;  // TCP_KEEPINTVL
  int count = 0;       // TCP_KEEPCNT (the bound again, for kernels without TCP_USER_TIMEOUT)
  unsigned user_timeout_ms = 0;  // TCP_USER_TIMEOUT
  int worst_case_s() const noexcept { return idle_s + count * interval_s; }
};
KeepalivePlan keepalive_plan(int timeout_s) noexcept;
inline constexpr int kMinPeerKeepaliveS = 2;
inline constexpr int kMaxPeerKeepaliveS = 3600;

// What the watcher and the comm share about one connection's peer.
class PeerState {
 public:
  // `nudge`: called once, on the watcher's thread, after the state is marked gone (the comm's
  // device health-check counter; see ConnectedComm::check_health).
  explicit PeerState(std::function<void()> nudge) : nudge_(std::move(nudge)) {}

  bool gone() const noexcept { return gone_.load(std::memory_order_acquire); }
  // Why, once gone() (written before gone is set, never after).
  const std::string& reason() const noexcept { return reason_; }

  void mark_gone(std::string reason) noexcept;

 private:
  std::atomic<bool> gone_{false};
  std::string reason_;
  std::function<void()> nudge_;
};

// A comm's registration with the process's watcher. Destroying it (the comm's close) sends the
// Goodbye, stops watching and closes the socket; when it returns the watcher holds nothing of it.
class PeerWatch {
 public:
  // Hands `socket` (its handshake finished, this side's Hello sent) to the watcher. Fails
  // (nothing is watched; the caller logs and goes on without) when the watcher cannot start.
  static Result<std::unique_ptr<PeerWatch>> start(Socket socket, uint64_t nonce, int keepalive_s,
                                                  std::shared_ptr<PeerState> state,
                                                  std::string peer_text);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  const PeerState& state() const noexcept { return *state_; }

 private:
  PeerWatch(uint64_t id, std::shared_ptr<PeerState> state) : id_(id), state_(std::move(state)) {}
  uint64_t id_;
  std::shared_ptr<PeerState> state_;
};

// For tests: sockets the watcher holds now (each watched comm's one; 0 once all are closed).
size_t watched_socket_count();

}  // namespace roce::net
