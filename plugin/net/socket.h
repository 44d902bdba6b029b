// Non-blocking TCP for the out-of-band bootstrap: a listener, an outgoing connection in
// progress, and a FramedChannel that moves whole length-prefixed messages. Nothing here blocks:
// every operation returns Done, InProgress (call again later) or Error, and the next call
// resumes where the last one stopped. NCCL polls connect() and accept() from its proxy thread,
// and one thread may drive both ends of a loopback connection in turn, so blocking anywhere
// would deadlock it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/socket_address.h"
#include "roce/result.h"

namespace roce::net {

enum class IoStatus { Done, InProgress, Error };

enum class SocketErrorKind {
  None,
  System,            // a system call failed (errno in the message)
  Refused,           // nobody listens at the peer's address
  PeerClosed,        // orderly close between messages
  Reset,             // connection reset by the peer
  Timeout,           // the deadline passed before the operation finished
  Oversized,         // a frame announced more bytes than the channel accepts
  Truncated,         // the peer closed in the middle of a frame
  OutOfDescriptors,  // accept: the process or system file-descriptor limit (EMFILE, ENFILE)
};

struct SocketError {
  SocketErrorKind kind = SocketErrorKind::None;
  std::string message;  // one line: what, with whom, why, and the likely fix
};

const char* socket_error_kind_name(SocketErrorKind kind);

using Clock = std::chrono::steady_clock;

// Owns one file descriptor; closes it on destruction. Move-only.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { reset(); }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

// A connected, non-blocking TCP stream (TCP_NODELAY, close-on-exec).
class Socket {
 public:
  Socket() = default;
  Socket(FileDescriptor fd, SocketAddress peer) : fd_(std::move(fd)), peer_(peer) {}

  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  const SocketAddress& peer() const { return peer_; }

 private:
  FileDescriptor fd_;
  SocketAddress peer_;
};

// Listens on one address (port 0: the kernel picks; address() then holds the real port).
class Listener {
 public:
  // A backlog for thousands of simultaneous connects (large jobs connect all at once); the
  // kernel caps it at net.core.somaxconn.
  static constexpr int kBacklog = 16384;

  static Result<Listener> open(const SocketAddress& bind_address);

  const SocketAddress& address() const { return address_; }
  int fd() const { return fd_.get(); }

  // Done: *socket holds a new connection. InProgress: none pending (connections that failed
  // before being accepted are skipped the same way). Error: the listener cannot accept (for
  // example out of file descriptors); *error says why.
  IoStatus accept(Socket* socket, SocketError* error);

 private:
  Listener(FileDescriptor fd, SocketAddress address) : fd_(std::move(fd)), address_(address) {}

  FileDescriptor fd_;
  SocketAddress address_;
};

// An outgoing connection being established.
class Connector {
 public:
  // Starts a non-blocking connect. Fails at once only when no socket can be created.
  static Result<Connector> start(const SocketAddress& peer, Clock::time_point deadline);

  // Done: *socket is connected (the connector is then spent). InProgress: not yet. Error:
  // refused, unreachable, timed out (*error says which).
  IoStatus progress(Socket* socket, SocketError* error);

  const SocketAddress& peer() const { return peer_; }

 private:
  Connector(FileDescriptor fd, SocketAddress peer, Clock::time_point deadline, bool connected,
            int immediate_errno)
      : fd_(std::move(fd)),
        peer_(peer),
        deadline_(deadline),
        connected_(connected),
        immediate_errno_(immediate_errno) {}

  FileDescriptor fd_;
  SocketAddress peer_;
  Clock::time_point deadline_;
  bool connected_ = false;
  int immediate_errno_ = 0;  // connect(2) failed at once; reported by progress()
};

// Whole messages over a Socket: each frame is a 4-byte little-endian length and that many
// bytes. Sends and receives survive partial reads and writes, EAGAIN and EINTR; an announced
// length above max_frame is rejected before anything is allocated. One deadline covers the
// whole exchange (the handshake), and any error is sticky: later calls return it again.
class FramedChannel {
 public:
  static constexpr size_t kHeaderSize = 4;
  static constexpr size_t kDefaultMaxFrame = size_t{64} * 1024;

  FramedChannel(Socket socket, Clock::time_point deadline, size_t max_frame = kDefaultMaxFrame);

  // Appends one message to the outgoing queue (no I/O). A message longer than max_frame is
  // refused (false, sticky Oversized error), as the peer would reject it.
  bool queue(std::span<const uint8_t> message);

  // Writes queued bytes. Done when everything queued is in the kernel's send buffer.
  IoStatus flush();

  // Reads towards the next message. Done: *message holds it whole.
  IoStatus receive(std::vector<uint8_t>* message);

  const SocketError& error() const { return error_; }
  const SocketAddress& peer() const { return socket_.peer(); }
  int fd() const { return socket_.fd(); }
  size_t max_frame() const { return max_frame_; }
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  // The socket, for the peer watch once the handshake is over (net/peer_watch.h). The channel
  // is spent after this; bytes it read or queued and did not hand out or send are dropped
  // (the handshake reads whole frames only, so there are none).
  Socket release_socket() { return std::move(socket_); }

 private:
  IoStatus fail(SocketErrorKind kind, std::string message);
  IoStatus check_deadline(std::string_view doing);

  Socket socket_;
  Clock::time_point deadline_;
  size_t max_frame_;
  SocketError error_;

  std::vector<uint8_t> outgoing_;
  size_t outgoing_sent_ = 0;

  uint8_t header_[kHeaderSize] = {};
  size_t header_got_ = 0;
  std::vector<uint8_t> body_;
  size_t body_got_ = 0;
  bool body_started_ = false;
};

}  // namespace roce::net
