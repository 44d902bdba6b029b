// Non-blocking TCP listener, connector and framed channel (see net/socket.h).
#include "net/socket.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "util/errno_text.h"

namespace roce::net {
namespace {

void set_nodelay(int fd) {
  // The handshake is a few small request/response messages: Nagle would add delayed-ACK stalls.
  // Failure only costs latency, so it is not an error.
  const int one = 1;
  static_cast<void>(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
}

std::optional<SocketAddress> local_address(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) {
    return std::nullopt;
  }
  return SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&storage), length);
}

// Errors that accept(2) reports for a connection that died before it was accepted: Linux passes
// pending network errors of the new socket to accept, and the listener itself is fine.
bool transient_accept_error(int error_number) {
  switch (error_number) {
    case EAGAIN:
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
    case EPERM:  // a firewall rule refused this one connection
      return true;
    default:
      return false;
  }
}

std::string connect_hint(int error_number) {
  switch (error_number) {
    case ECONNREFUSED:
      return "nothing listens there: the peer's listen comm was closed, the handle is stale, or "
             "the peer process died";
    case ENETUNREACH:
    case EHOSTUNREACH:
      return "no route to the peer: check the interfaces and routes of both nodes";
    case ETIMEDOUT:
      return "the peer did not answer: a firewall may drop the bootstrap port";
    default:
      return "check that the peer's address is reachable from this node";
  }
}

}  // namespace

const char* socket_error_kind_name(SocketErrorKind kind) {
  switch (kind) {
    case SocketErrorKind::None:
      return "none";
    case SocketErrorKind::System:
      return "system error";
    case SocketErrorKind::Refused:
      return "refused";
    case SocketErrorKind::PeerClosed:
      return "peer closed";
    case SocketErrorKind::Reset:
      return "reset";
    case SocketErrorKind::Timeout:
      return "timeout";
    case SocketErrorKind::Oversized:
      return "oversized frame";
    case SocketErrorKind::Truncated:
      return "truncated frame";
    case SocketErrorKind::OutOfDescriptors:
      return "out of file descriptors";
  }
  return "unknown";
}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

void FileDescriptor::reset() {
  if (fd_ >= 0) {
    // close() may report EINTR, but the descriptor is released either way on Linux: never retry.
    static_cast<void>(::close(fd_));
    fd_ = -1;
  }
}

Result<Listener> Listener::open(const SocketAddress& bind_address) {
  FileDescriptor fd(::socket(bind_address.domain(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return failure("cannot create a listening socket for " + bind_address.to_string() + ": " +
                   errno_text(errno));
  }
  const int one = 1;
  if (setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return failure("setsockopt(SO_REUSEADDR) on " + bind_address.to_string() + ": " +
                   errno_text(errno));
  }
  if (::bind(fd.get(), bind_address.raw(), bind_address.raw_length()) != 0) {
    const int bind_errno = errno;
    return failure("cannot bind the bootstrap listener to " + bind_address.to_string() + ": " +
                   errno_text(bind_errno) +
                   (bind_errno == EADDRNOTAVAIL
                        ? "; no interface of this node has that address (is the interface up?)"
                        : ""));
  }
  if (::listen(fd.get(), kBacklog) != 0) {
    return failure("listen on " + bind_address.to_string() + ": " + errno_text(errno));
  }
  const std::optional<SocketAddress> bound = local_address(fd.get());
  if (!bound) {
    return failure("getsockname on the listener for " + bind_address.to_string() + ": " +
                   errno_text(errno));
  }
  return Listener(std::move(fd), *bound);
}

IoStatus Listener::accept(Socket* socket, SocketError* error) {
  while (true) {
    sockaddr_storage storage{};
    socklen_t length = sizeof(storage);
    const int fd = ::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&storage), &length,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int accept_errno = errno;
      if (accept_errno == EINTR || accept_errno == ECONNABORTED) {
        continue;
      }
      if (transient_accept_error(accept_errno)) {
        return IoStatus::InProgress;
      }
      error->kind = (accept_errno == EMFILE || accept_errno == ENFILE)
                        ? SocketErrorKind::OutOfDescriptors
                        : SocketErrorKind::System;
      error->message = "accept on " + address_.to_string() + ": " + errno_text(accept_errno) +
                       ((accept_errno == EMFILE || accept_errno == ENFILE)
                            ? "; raise the open-file limit (ulimit -n)"
                            : "");
      return IoStatus::Error;
    }
    FileDescriptor owned(fd);
    const std::optional<SocketAddress> peer =
        SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&storage), length);
    if (!peer) {
      continue;  // not an IP peer: cannot happen on an AF_INET/AF_INET6 listener; drop it
    }
    set_nodelay(fd);
    *socket = Socket(std::move(owned), *peer);
    return IoStatus::Done;
  }
}

Result<Connector> Connector::start(const SocketAddress& peer, Clock::time_point deadline) {
  FileDescriptor fd(::socket(peer.domain(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return failure("cannot create a socket to connect to " + peer.to_string() + ": " +
                   errno_text(errno));
  }
  set_nodelay(fd.get());
  if (::connect(fd.get(), peer.raw(), peer.raw_length()) == 0) {
    return Connector(std::move(fd), peer, deadline, true, 0);
  }
  const int connect_errno = errno;
  // EINTR leaves the connect running asynchronously, like EINPROGRESS; progress() sees how it
  // ends. Immediate failures (refused on loopback, unreachable) also surface through
  // progress(), so the caller handles every connect outcome in one place.
  if (connect_errno == EINPROGRESS || connect_errno == EINTR) {
    return Connector(std::move(fd), peer, deadline, false, 0);
  }
  return Connector(FileDescriptor(), peer, deadline, false, connect_errno);
}

IoStatus Connector::progress(Socket* socket, SocketError* error) {
  const auto fail = [&](SocketErrorKind kind, int error_number) {
    error->kind = kind;
    error->message = "connect to " + peer_.to_string() + " failed: " + errno_text(error_number) +
                     "; " + connect_hint(error_number);
    return IoStatus::Error;
  };
  if (immediate_errno_ != 0) {
    return fail(
        immediate_errno_ == ECONNREFUSED ? SocketErrorKind::Refused : SocketErrorKind::System,
        immediate_errno_);
  }
  if (!fd_.valid()) {
    error->kind = SocketErrorKind::System;
    error->message = "connect to " + peer_.to_string() + ": the connection was already taken";
    return IoStatus::Error;
  }
  if (!connected_) {
    pollfd entry{fd_.get(), POLLOUT, 0};
    const int ready = ::poll(&entry, 1, 0);
    if (ready < 0 && errno != EINTR) {
      return fail(SocketErrorKind::System, errno);
    }
    if (ready <= 0) {
      if (Clock::now() > deadline_) {
        error->kind = SocketErrorKind::Timeout;
        error->message = "connect to " + peer_.to_string() +
                         " timed out (NCCL_ROCE_CONNECT_TIMEOUT_MS); " + connect_hint(ETIMEDOUT);
        return IoStatus::Error;
      }
      return IoStatus::InProgress;
    }
    int so_error = 0;
    socklen_t length = sizeof(so_error);
    if (getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &so_error, &length) != 0) {
      return fail(SocketErrorKind::System, errno);
    }
    if (so_error != 0) {
      return fail(so_error == ECONNREFUSED ? SocketErrorKind::Refused : SocketErrorKind::System,
                  so_error);
    }
  }
  *socket = Socket(std::move(fd_), peer_);
  return IoStatus::Done;
}

FramedChannel::FramedChannel(Socket socket, Clock::time_point deadline, size_t max_frame)
    : socket_(std::move(socket)), deadline_(deadline), max_frame_(max_frame) {}

IoStatus FramedChannel::fail(SocketErrorKind kind, std::string message) {
  error_.kind = kind;
  error_.message = std::move(message);
  return IoStatus::Error;
}

IoStatus FramedChannel::check_deadline(std::string_view doing) {
  if (Clock::now() > deadline_) {
    return fail(SocketErrorKind::Timeout,
                std::string(doing) + " " + socket_.peer().to_string() +
                    " timed out (NCCL_ROCE_CONNECT_TIMEOUT_MS): the peer stopped responding "
                    "during connection setup");
  }
  return IoStatus::InProgress;
}

bool FramedChannel::queue(std::span<const uint8_t> message) {
  if (error_.kind != SocketErrorKind::None) {
    return false;
  }
  if (message.size() > max_frame_) {
    fail(SocketErrorKind::Oversized, "message of " + std::to_string(message.size()) +
                                         " bytes for " + socket_.peer().to_string() +
                                         " exceeds the frame limit of " +
                                         std::to_string(max_frame_) + " bytes");
    return false;
  }
  const auto length = static_cast<uint32_t>(message.size());
  for (size_t i = 0; i < kHeaderSize; ++i) {
    outgoing_.push_back(static_cast<uint8_t>(length >> (8 * i)));
  }
  outgoing_.insert(outgoing_.end(), message.begin(), message.end());
  return true;
}

IoStatus FramedChannel::flush() {
  if (error_.kind != SocketErrorKind::None) {
    return IoStatus::Error;
  }
  while (outgoing_sent_ < outgoing_.size()) {
    const ssize_t sent = ::send(socket_.fd(), outgoing_.data() + outgoing_sent_,
                                outgoing_.size() - outgoing_sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      outgoing_sent_ += static_cast<size_t>(sent);
      continue;
    }
    if (sent == 0) {
      return check_deadline("sending to");
    }
    const int send_errno = errno;
    if (send_errno == EINTR) {
      continue;
    }
    // EWOULDBLOCK is EAGAIN on Linux.
    if (send_errno == EAGAIN) {
      return check_deadline("sending to");
    }
    if (send_errno == EPIPE) {
      return fail(SocketErrorKind::PeerClosed,
                  "peer " + socket_.peer().to_string() +
                      " closed the connection while this side was sending");
    }
    if (send_errno == ECONNRESET) {
      return fail(SocketErrorKind::Reset, "connection to " + socket_.peer().to_string() +
                                              " was reset by the peer (did it exit or reject "
                                              "the connection?)");
    }
    return fail(SocketErrorKind::System,
                "send to " + socket_.peer().to_string() + ": " + errno_text(send_errno));
  }
  outgoing_.clear();
  outgoing_sent_ = 0;
  return IoStatus::Done;
}

IoStatus FramedChannel::receive(std::vector<uint8_t>* message) {
  if (error_.kind != SocketErrorKind::None) {
    return IoStatus::Error;
  }
  while (true) {
    uint8_t* target = nullptr;
    size_t wanted = 0;
    if (header_got_ < kHeaderSize) {
      target = header_ + header_got_;
      wanted = kHeaderSize - header_got_;
    } else {
      if (!body_started_) {
        uint32_t length = 0;
        for (size_t i = 0; i < kHeaderSize; ++i) {
          length |= static_cast<uint32_t>(header_[i]) << (8 * i);
        }
        if (length > max_frame_) {
          return fail(SocketErrorKind::Oversized,
                      "peer " + socket_.peer().to_string() + " announced a frame of " +
                          std::to_string(length) + " bytes, above the limit of " +
                          std::to_string(max_frame_) +
                          " (not this plugin's handshake: a different program or version?)");
        }
        body_.assign(length, 0);
        body_got_ = 0;
        body_started_ = true;
      }
      if (body_got_ == body_.size()) {
        *message = std::move(body_);
        body_ = {};
        header_got_ = 0;
        body_got_ = 0;
        body_started_ = false;
        return IoStatus::Done;
      }
      target = body_.data() + body_got_;
      wanted = body_.size() - body_got_;
    }
    const ssize_t got = ::recv(socket_.fd(), target, wanted, MSG_DONTWAIT);
    if (got > 0) {
      (header_got_ < kHeaderSize ? header_got_ : body_got_) += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) {
      if (header_got_ == 0) {
        return fail(SocketErrorKind::PeerClosed,
                    "peer " + socket_.peer().to_string() + " closed the connection");
      }
      return fail(SocketErrorKind::Truncated,
                  "peer " + socket_.peer().to_string() + " closed the connection inside a frame (" +
                      (body_started_ ? std::to_string(body_got_) + " of " +
                                           std::to_string(body_.size()) + " body bytes"
                                     : std::to_string(header_got_) + " of " +
                                           std::to_string(kHeaderSize) + " header bytes") +
                      " received)");
    }
    const int recv_errno = errno;
    if (recv_errno == EINTR) {
      continue;
    }
    if (recv_errno == EAGAIN) {
      return check_deadline("waiting for");
    }
    if (recv_errno == ECONNRESET) {
      return fail(SocketErrorKind::Reset, "connection to " + socket_.peer().to_string() +
                                              " was reset by the peer (did it exit or reject "
                                              "the connection?)");
    }
    return fail(SocketErrorKind::System,
                "recv from " + socket_.peer().to_string() + ": " + errno_text(recv_errno));
  }
}

}  // namespace roce::net
