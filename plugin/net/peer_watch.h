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
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "net/epoch_frames.h"
#include "net/socket.h"

namespace roce::net {

enum class WatchSignal : uint16_t { Hello = 5, Goodbye = 6 };  // after MessageKind's values

// 4-byte frame length, 12-byte handshake header, 8-byte nonce.
inline constexpr size_t kWatchFrameSize = 24;

std::array<uint8_t, kWatchFrameSize> encode_watch_frame(WatchSignal signal, uint64_t nonce);

// Splits the bytes a watched socket delivers into signals and recovery-epoch frames
// (epoch_frames.h); frames may arrive in pieces.
class WatchFrameParser {
 public:
  explicit WatchFrameParser(uint64_t nonce) : nonce_(nonce) {}

  enum class Event { None, Hello, Goodbye, Epoch, Invalid };
  // Consumes bytes up to and including the next whole frame. *used: how many were consumed.
  // Epoch: take_epoch() has the decoded frame. Invalid: not a frame of this connection, or one
  // out of range (sticky; *detail says why).
  Event feed(std::span<const uint8_t> bytes, size_t* used, std::string* detail);
  // The frame of the last Epoch event.
  EpochFrame take_epoch() { return std::move(epoch_); }

 private:
  Event decode_signal(std::string* detail) const;
  Event decode_epoch(std::string* detail);

  uint64_t nonce_;
  std::vector<uint8_t> frame_;  // the frame read so far, its 4-byte length first
  EpochFrame epoch_;
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

  // The peer said goodbye (closed its comm normally): nothing is wrong, but a recovery epoch
  // waiting for its answer will not get one. Set by the watcher, which then calls the nudge.
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  void mark_closed() noexcept;

  // Recovery-epoch frames from the peer, in the order they came: the watcher's thread posts each
  // (and calls the nudge), the comm takes them on NCCL's thread. At most kMaxPendingEpochFrames
  // wait; a peer that sends more loses its oldest (a newer epoch supersedes an older one).
  static constexpr size_t kMaxPendingEpochFrames = 8;
  void post_epoch_frame(EpochFrame frame) noexcept;
  bool has_epoch_frames() const noexcept { return pending_.load(std::memory_order_acquire); }
  std::vector<EpochFrame> take_epoch_frames();

 private:
  std::atomic<bool> gone_{false};
  std::atomic<bool> closed_{false};
  std::string reason_;
  std::function<void()> nudge_;
  std::atomic<bool> pending_{false};
  std::mutex frames_mutex_;
  std::vector<EpochFrame> frames_;
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
  // The recovery-epoch frames the peer sent since the last call (PeerState::take_epoch_frames).
  std::vector<EpochFrame> take_epoch_frames() { return state_->take_epoch_frames(); }

  // Sends a frame (encode_epoch_frame's bytes) to the peer on the kept socket, without waiting:
  // what the socket does not take at once is sent by the watcher's thread as it drains. Fails
  // when the socket is no longer watched (the peer left or closed), or when more than
  // kMaxOutboundBytes would wait.
  static constexpr size_t kMaxOutboundBytes = 4 * kMaxEpochFrameBytes;
  Status send(std::span<const uint8_t> frame);

 private:
  PeerWatch(uint64_t id, std::shared_ptr<PeerState> state) : id_(id), state_(std::move(state)) {}
  uint64_t id_;
  std::shared_ptr<PeerState> state_;
};

// For tests: sockets the watcher holds now (each watched comm's one; 0 once all are closed).
size_t watched_socket_count();

}  // namespace roce::net
