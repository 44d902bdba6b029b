// The peer watch: see peer_watch.h.
#include "net/peer_watch.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "net/handshake.h"
#include "net/wire.h"
#include "util/errno_text.h"
#include "util/log.h"

namespace roce::net {
namespace {

constexpr uint32_t kWatchBodySize = 8;

void put_u16(uint8_t* at, uint16_t value) {
  at[0] = static_cast<uint8_t>(value);
  at[1] = static_cast<uint8_t>(value >> 8);
}
void put_u32(uint8_t* at, uint32_t value) {
  for (int i = 0; i < 4; ++i) {
    at[i] = static_cast<uint8_t>(value >> (8 * i));
  }
}
uint64_t get_le(const uint8_t* at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(at[i]) << (8 * i);
  }
  return value;
}

// Best effort: the socket's send buffer holds nothing else, so the 24 bytes go at once; a peer
// already gone cannot read them anyway.
void send_goodbye(int fd, uint64_t nonce) noexcept {
  const auto frame = encode_watch_frame(WatchSignal::Goodbye, nonce);
  static_cast<void>(::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT));
}

// Sets the keepalive of a watched socket; a refusal is logged (the socket is still watched for
// FIN and reset, which is what a dead process gives).
void apply_keepalive(int fd, const KeepalivePlan& plan, const std::string& peer_text) {
  const int one = 1;
  const unsigned user_timeout = plan.user_timeout_ms;
  const bool ok =
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) == 0 &&
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &plan.idle_s, sizeof(plan.idle_s)) == 0 &&
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &plan.interval_s, sizeof(plan.interval_s)) == 0 &&
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &plan.count, sizeof(plan.count)) == 0 &&
      setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout)) == 0;
  if (!ok) {
    ROCE_WARN(NCCL_NET,
              "peer watch of {}: cannot set the keepalive ({}); a peer host that stops answering "
              "is not noticed by the watch (a peer process that dies still is)",
              peer_text, errno_text(errno));
  }
}

// The process's one watcher: a thread waiting on every watched socket with epoll. Every entry is
// touched only under mutex_, by the thread (reading what arrived) or by a comm's close
// (removing it), so a close never races the thread; epoll's data is the entry's id, never a
// pointer, so an event for an entry already removed finds nothing. Never destroyed (a comm
// closed by a static destructor may still call remove()); the thread is stopped at unload.
class Watcher {
 public:
  static Watcher& instance() {
    static auto* watcher = new Watcher;
    return *watcher;
  }

  Result<uint64_t> add(Socket socket, uint64_t nonce, int keepalive_s,
                       std::shared_ptr<PeerState> state, std::string peer_text) {
    std::lock_guard<std::mutex> lock(mutex_);
    // This side's hello has gone out: a socket this side cannot watch says goodbye before it
    // closes, or the peer would take the close for this process's death.
    const auto refuse = [&](const std::string& why) {
      send_goodbye(socket.fd(), nonce);
      return failure(why);
    };
    if (const Status started = start_locked(); !started) {
      return refuse(started.error());
    }
    apply_keepalive(socket.fd(), keepalive_plan(keepalive_s), peer_text);
    const uint64_t id = next_id_++;
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.u64 = id;
    if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, socket.fd(), &event) != 0) {
      return refuse("epoll_ctl(ADD): " + errno_text(errno));
    }
    entries_.emplace(id, Entry{std::move(socket),
                               WatchFrameParser(nonce),
                               nonce,
                               false,
                               std::move(state),
                               std::move(peer_text),
                               {}});
    return id;
  }

  // The comm's close: the Goodbye (best effort: the socket's buffer is empty but for it), then
  // the socket goes. Nothing of the entry is left when this returns.
  void remove(uint64_t id) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) {
      return;  // the watcher already let it go (the peer left first)
    }
    send_goodbye(it->second.socket.fd(), it->second.nonce);
    drop_locked(it);
  }

  size_t count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

  // A frame for the peer: written now as far as the socket takes it, the rest queued for the
  // thread (EPOLLOUT), behind anything queued before, so frames never interleave.
  Status send(uint64_t id, std::span<const uint8_t> frame) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) {
      return failure("the connection's bootstrap socket is no longer watched (the peer left)");
    }
    Entry& entry = it->second;
    if (entry.outbound.size() + frame.size() > PeerWatch::kMaxOutboundBytes) {
      return failure(
          fmt::format("{} bytes already wait to go to {}", entry.outbound.size(), entry.peer_text));
    }
    const bool was_idle = entry.outbound.empty();
    entry.outbound.insert(entry.outbound.end(), frame.begin(), frame.end());
    if (was_idle) {
      return flush_locked(it);
    }
    return {};
  }

  // At unload: the thread ends; sockets still watched close without a Goodbye (this process is
  // going away, which is what their peers should learn).
  void stop() noexcept {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!thread_.joinable()) {
      return;
    }
    const uint64_t one = 1;
    if (::write(stop_fd_.get(), &one, sizeof(one)) != static_cast<ssize_t>(sizeof(one))) {
      return;  // cannot happen to an eventfd far from its limit; never wait for a deaf thread
    }
    std::thread thread = std::move(thread_);
    lock.unlock();
    thread.join();
    lock.lock();
    entries_.clear();
  }

 private:
  struct Entry {
    Socket socket;
    WatchFrameParser parser;
    uint64_t nonce;
    bool hello = false;
    std::shared_ptr<PeerState> state;
    std::string peer_text;
    std::vector<uint8_t> outbound;  // frames the socket has not taken yet, in order
  };
  using Entries = std::unordered_map<uint64_t, Entry>;

  Status start_locked() {
    if (thread_.joinable()) {
      return {};
    }
    if (!epoll_fd_.valid()) {
      epoll_fd_ = FileDescriptor(epoll_create1(EPOLL_CLOEXEC));
      if (!epoll_fd_.valid()) {
        return failure("epoll_create1: " + errno_text(errno));
      }
      stop_fd_ = FileDescriptor(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
      if (!stop_fd_.valid()) {
        return failure("eventfd: " + errno_text(errno));
      }
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.u64 = kStopId;
      if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, stop_fd_.get(), &event) != 0) {
        return failure("epoll_ctl(ADD) of the stop eventfd: " + errno_text(errno));
      }
    }
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
      return failure(std::string("cannot start the peer watch thread: ") + e.what());
    }
    return {};
  }

  // Writes what waits for the peer until the socket would block; watches for room (EPOLLOUT)
  // while anything is left. A socket that fails is left to read_locked, which sees its end.
  Status flush_locked(Entries::iterator it) {
    Entry& entry = it->second;
    while (!entry.outbound.empty()) {
      const ssize_t sent = ::send(entry.socket.fd(), entry.outbound.data(), entry.outbound.size(),
                                  MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent > 0) {
        entry.outbound.erase(entry.outbound.begin(),
                             entry.outbound.begin() + static_cast<std::ptrdiff_t>(sent));
        continue;
      }
      if (sent < 0 && errno == EINTR) {
        continue;
      }
      if (sent < 0 && errno != EAGAIN) {
        const int error = errno;
        entry.outbound.clear();
        return failure(fmt::format("send to {}: {}", entry.peer_text, errno_text(error)));
      }
      break;
    }
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP | (entry.outbound.empty() ? 0U : EPOLLOUT);
    event.data.u64 = it->first;
    static_cast<void>(epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, entry.socket.fd(), &event));
    return {};
  }

  void drop_locked(Entries::iterator it) noexcept {
    static_cast<void>(epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, it->second.socket.fd(), nullptr));
    entries_.erase(it);
  }

  void run() noexcept {
    std::array<epoll_event, 64> events{};
    for (;;) {
      const int n = epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()), -1);
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        ROCE_WARN(NCCL_NET, "peer watch: epoll_wait failed ({}); dead peers are no longer noticed",
                  errno_text(errno));
        return;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      for (int i = 0; i < n; ++i) {
        // A copy: epoll_event is packed on x86-64, so its u64 may be misaligned for a reference.
        const uint64_t id = events[static_cast<size_t>(i)].data.u64;
        if (id == kStopId) {
          return;
        }
        const auto it = entries_.find(id);
        if (it == entries_.end()) {
          continue;  // removed by its comm's close after epoll_wait returned
        }
        try {
          if ((events[static_cast<size_t>(i)].events & EPOLLOUT) != 0) {
            static_cast<void>(flush_locked(it));  // a failed socket ends in read_locked
          }
          read_locked(it);
        } catch (const std::exception& e) {  // out of memory formatting a message
          ROCE_WARN(NCCL_NET, "peer watch of {}: {}; no longer watched", it->second.peer_text,
                    e.what());
          drop_locked(it);
        }
      }
    }
  }

  // Reads what the peer sent until the socket would block, and acts on the end of it.
  void read_locked(Entries::iterator it) {
    Entry& entry = it->second;
    std::array<uint8_t, 256> buffer{};
    for (;;) {
      const ssize_t got = ::recv(entry.socket.fd(), buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (got > 0) {
        std::span<const uint8_t> bytes(buffer.data(), static_cast<size_t>(got));
        while (!bytes.empty()) {
          size_t used = 0;
          std::string detail;
          switch (entry.parser.feed(bytes, &used, &detail)) {
            case WatchFrameParser::Event::None:
              break;
            case WatchFrameParser::Event::Hello:
              entry.hello = true;
              break;
            case WatchFrameParser::Event::Epoch:
              entry.state->post_epoch_frame(entry.parser.take_epoch());
              break;
            case WatchFrameParser::Event::Goodbye:
              // The peer closed its comm normally: nothing is wrong, and nothing more to watch.
              ROCE_INFO(NCCL_NET, "peer watch: {} closed its comm (goodbye)", entry.peer_text);
              entry.state->mark_closed();
              drop_locked(it);
              return;
            case WatchFrameParser::Event::Invalid:
              ROCE_WARN(NCCL_NET,
                        "peer watch: {} sent {} on its bootstrap connection; the connection is "
                        "no longer watched (a dead peer is then found by the data path only)",
                        entry.peer_text, detail);
              drop_locked(it);
              return;
          }
          bytes = bytes.subspan(used);
        }
        continue;
      }
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got < 0 && errno == EAGAIN) {
        return;
      }
      const std::string how =
          got == 0 ? std::string("connection closed without goodbye")
                   : (errno == ECONNRESET ? std::string("connection reset without goodbye")
                      : errno == ETIMEDOUT
                          ? std::string("no answer from the peer's host within the keepalive "
                                        "bound, NCCL_ROCE_PEER_KEEPALIVE_S")
                          : "connection failed without goodbye: " + errno_text(errno));
      if (!entry.hello) {
        // A peer that does not watch closes its end after the handshake: nothing to learn.
        ROCE_INFO(NCCL_NET, "peer watch: {} does not watch its connections ({}); not watched",
                  entry.peer_text, how);
      } else {
        entry.state->mark_gone(fmt::format("peer process gone ({}): {}", how, entry.peer_text));
      }
      drop_locked(it);
      return;
    }
  }

  static constexpr uint64_t kStopId = 0;

  std::mutex mutex_;
  FileDescriptor epoll_fd_;
  FileDescriptor stop_fd_;
  std::thread thread_;
  uint64_t next_id_ = kStopId + 1;
  Entries entries_;
};

// Stops the watcher's thread when the plugin is unloaded (or the process exits), so no thread
// runs in unmapped code.
struct StopAtUnload {
  StopAtUnload() = default;
  StopAtUnload(const StopAtUnload&) = delete;
  StopAtUnload& operator=(const StopAtUnload&) = delete;
  ~StopAtUnload() { Watcher::instance().stop(); }
} stop_at_unload;

}  // namespace

std::array<uint8_t, kWatchFrameSize> encode_watch_frame(WatchSignal signal, uint64_t nonce) {
  std::array<uint8_t, kWatchFrameSize> frame{};
  put_u32(frame.data(), static_cast<uint32_t>(kHandshakeHeaderSize + kWatchBodySize));
  put_u32(frame.data() + 4, kHandshakeMagic);
  put_u16(frame.data() + 8, kHandshakeVersion);
  put_u16(frame.data() + 10, static_cast<uint16_t>(signal));
  put_u32(frame.data() + 12, kWatchBodySize);
  put_u32(frame.data() + 16, static_cast<uint32_t>(nonce));
  put_u32(frame.data() + 20, static_cast<uint32_t>(nonce >> 32));
  return frame;
}

WatchFrameParser::Event WatchFrameParser::feed(std::span<const uint8_t> bytes, size_t* used,
                                               std::string* detail) {
  *used = 0;
  if (invalid_) {
    *used = bytes.size();
    *detail = "bytes after an invalid frame";
    return Event::Invalid;
  }
  // The length first, then as many bytes as it says: a frame is taken whole before it is read.
  while (*used < bytes.size()) {
    size_t need = kFrameLengthBytes;
    if (frame_.size() >= kFrameLengthBytes) {
      need += get_le(frame_.data(), 4);
    }
    const size_t take = std::min(bytes.size() - *used, need - frame_.size());
    const auto from = bytes.begin() + static_cast<std::ptrdiff_t>(*used);
    frame_.insert(frame_.end(), from, from + static_cast<std::ptrdiff_t>(take));
    *used += take;
    if (frame_.size() == kFrameLengthBytes) {
      const uint64_t length = get_le(frame_.data(), 4);
      if (length < kHandshakeHeaderSize + kWatchBodySize || length > kMaxEpochFrameBytes) {
        *detail = fmt::format("a frame of {} bytes, not a watch or epoch frame ({}..{})", length,
                              kHandshakeHeaderSize + kWatchBodySize, kMaxEpochFrameBytes);
        invalid_ = true;
        return Event::Invalid;
      }
      continue;  // the body, from what is left of `bytes`
    }
    if (frame_.size() < need) {
      return Event::None;
    }
    const Event event =
        frame_.size() == kWatchFrameSize ? decode_signal(detail) : decode_epoch(detail);
    frame_.clear();
    invalid_ = event == Event::Invalid;
    return event;
  }
  return Event::None;
}

WatchFrameParser::Event WatchFrameParser::decode_signal(std::string* detail) const {
  const uint8_t* f = frame_.data();
  const auto magic = get_le(f + 4, 4);
  const auto version = get_le(f + 8, 2);
  const auto kind = get_le(f + 10, 2);
  const auto body = get_le(f + 12, 4);
  const uint64_t nonce = get_le(f + 16, 8);
  if (magic != kHandshakeMagic || body != kWatchBodySize) {
    *detail = fmt::format("a frame that is not a watch frame (magic 0x{:x}, body {})", magic, body);
  } else if (version != kHandshakeVersion) {
    *detail = fmt::format("a watch frame of handshake version {} (this side {})", version,
                          kHandshakeVersion);
  } else if (nonce != nonce_) {
    *detail = fmt::format("a watch frame with nonce 0x{:x}, not this connection's", nonce);
  } else if (kind == static_cast<uint16_t>(WatchSignal::Hello)) {
    return Event::Hello;
  } else if (kind == static_cast<uint16_t>(WatchSignal::Goodbye)) {
    return Event::Goodbye;
  } else {
    *detail = fmt::format("a frame of kind {}, neither hello (5) nor goodbye (6)", kind);
  }
  return Event::Invalid;
}

WatchFrameParser::Event WatchFrameParser::decode_epoch(std::string* detail) {
  EpochDecodeResult decoded =
      decode_epoch_frame(std::span<const uint8_t>(frame_).subspan(kFrameLengthBytes), nonce_);
  if (!decoded.ok()) {
    *detail = "an epoch frame with " + decoded.error;
    return Event::Invalid;
  }
  epoch_ = std::move(decoded.frame);
  return Event::Epoch;
}

KeepalivePlan keepalive_plan(int timeout_s) noexcept {
  const int t = std::clamp(timeout_s, kMinPeerKeepaliveS, kMaxPeerKeepaliveS);
  KeepalivePlan plan;
  plan.idle_s = std::max(1, t / 2);
  plan.interval_s = std::max(1, t / 10);
  plan.count = std::max(1, (t - plan.idle_s + plan.interval_s - 1) / plan.interval_s);
  plan.user_timeout_ms = static_cast<unsigned>(t) * 1000U;
  return plan;
}

void PeerState::mark_gone(std::string reason) noexcept {
  if (gone_.load(std::memory_order_relaxed)) {
    return;
  }
  reason_ = std::move(reason);
  gone_.store(true, std::memory_order_release);
  if (nudge_) {
    nudge_();
  }
}

void PeerState::mark_closed() noexcept {
  closed_.store(true, std::memory_order_release);
  if (nudge_) {
    nudge_();
  }
}

void PeerState::post_epoch_frame(EpochFrame frame) noexcept {
  {
    std::lock_guard<std::mutex> lock(frames_mutex_);
    if (frames_.size() == kMaxPendingEpochFrames) {
      frames_.erase(frames_.begin());
    }
    try {
      frames_.push_back(std::move(frame));
    } catch (const std::bad_alloc&) {
      return;  // out of memory: the frame is lost, as one a dying peer did not send
    }
    pending_.store(true, std::memory_order_release);
  }
  if (nudge_) {
    nudge_();
  }
}

std::vector<EpochFrame> PeerState::take_epoch_frames() {
  std::lock_guard<std::mutex> lock(frames_mutex_);
  pending_.store(false, std::memory_order_relaxed);
  return std::exchange(frames_, {});
}

Result<std::unique_ptr<PeerWatch>> PeerWatch::start(Socket socket, uint64_t nonce, int keepalive_s,
                                                    std::shared_ptr<PeerState> state,
                                                    std::string peer_text) {
  Result<uint64_t> id =
      Watcher::instance().add(std::move(socket), nonce, keepalive_s, state, std::move(peer_text));
  if (!id) {
    return failure(id.error());
  }
  return std::unique_ptr<PeerWatch>(new PeerWatch(*id, std::move(state)));
}

Status PeerWatch::send(std::span<const uint8_t> frame) {
  return Watcher::instance().send(id_, frame);
}

PeerWatch::~PeerWatch() {
  Watcher::instance().remove(id_);
}

size_t watched_socket_count() {
  return Watcher::instance().count();
}

}  // namespace roce::net
