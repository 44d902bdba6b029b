// TCP rendezvous between the ranks.
#include "rendezvous.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "errors.h"

namespace roce::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMagic = 0x56524252;  // "RBRV"
constexpr std::uint32_t kMaxFrame = 64u << 20;

enum class Kind : std::uint32_t { Hello = 1, Welcome = 2, Data = 3, All = 4, Error = 5 };

struct FrameHeader {
  std::uint32_t magic;
  std::uint32_t kind;
  std::uint32_t rank;
  std::uint32_t length;
};

std::string errno_text(int err) {
  return std::strerror(err);
}

Clock::time_point deadline_after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int remaining_ms(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

void wait_fd(int fd, short events, Clock::time_point deadline, const std::string& what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ms = remaining_ms(deadline);
    if (ms == 0 && Clock::now() >= deadline) {
      throw BenchError("rendezvous: timed out " + what +
                       " (a rank is missing, hung or was started with another --rendezvous; " +
                       "--timeout sets the limit)");
    }
    const int rc = poll(&p, 1, ms);
    if (rc > 0) {
      return;
    }
    if (rc < 0 && errno != EINTR) {
      throw BenchError("rendezvous: poll failed " + what + ": " + errno_text(errno));
    }
  }
}

void write_all(int fd, const void* data, std::size_t size, Clock::time_point deadline,
               const std::string& what) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    wait_fd(fd, POLLOUT, deadline, what);
    const ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        continue;
      }
      throw BenchError("rendezvous: send failed " + what + ": " + errno_text(errno) +
                       " (the peer exited?)");
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void read_all(int fd, void* data, std::size_t size, Clock::time_point deadline,
              const std::string& what) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    wait_fd(fd, POLLIN, deadline, what);
    const ssize_t n = recv(fd, p, size, 0);
    if (n == 0) {
      throw BenchError("rendezvous: connection closed " + what +
                       " (that rank exited: see its error above)");
    }
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        continue;
      }
      throw BenchError("rendezvous: recv failed " + what + ": " + errno_text(errno));
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void send_frame(int fd, Kind kind, int rank, std::string_view payload, Clock::time_point deadline,
                const std::string& what) {
  const FrameHeader h{kMagic, static_cast<std::uint32_t>(kind), static_cast<std::uint32_t>(rank),
                      static_cast<std::uint32_t>(payload.size())};
  write_all(fd, &h, sizeof(h), deadline, what);
  write_all(fd, payload.data(), payload.size(), deadline, what);
}

struct Frame {
  Kind kind = Kind::Error;
  int rank = -1;
  std::string payload;
};

Frame read_frame(int fd, Clock::time_point deadline, const std::string& what) {
  FrameHeader h{};
  read_all(fd, &h, sizeof(h), deadline, what);
  if (h.magic != kMagic || h.length > kMaxFrame) {
    throw BenchError("rendezvous: garbage received " + what +
                     " (something other than roce-bench connected to the rendezvous port)");
  }
  Frame f{static_cast<Kind>(h.kind), static_cast<int>(h.rank), std::string(h.length, '\0')};
  read_all(fd, f.payload.data(), f.payload.size(), deadline, what);
  if (f.kind == Kind::Error) {
    throw BenchError("rendezvous: rank 0 refused this rank: " + f.payload);
  }
  return f;
}

void set_nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

addrinfo* resolve(const HostPort& hp, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &result);
  if (rc != 0) {
    throw BenchError("rendezvous: cannot resolve " + hp.host + ":" + hp.port + ": " +
                     gai_strerror(rc));
  }
  return result;
}

std::string address_text(const sockaddr* sa) {
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  const socklen_t len = sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (getnameinfo(sa, len, host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  return sa->sa_family == AF_INET6 ? "[" + std::string(host) + "]:" + port
                                   : std::string(host) + ":" + port;
}

std::uint64_t decode_u64(std::string_view bytes, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, bytes.data() + at, sizeof(v));
  return v;
}

std::string encode_u64(std::uint64_t v) {
  std::string out(sizeof(v), '\0');
  std::memcpy(out.data(), &v, sizeof(v));
  return out;
}

}  // namespace

HostPort split_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw BenchError("rendezvous address '" + text + "': expected host:port");
  }
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, text.substr(colon + 1)};
}

int listen_tcp(const std::string& address, std::string* bound) {
  const HostPort hp = split_host_port(address);
  addrinfo* list = resolve(hp, true);
  int last_error = 0;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
      *bound = address_text(reinterpret_cast<sockaddr*>(&ss));
      freeaddrinfo(list);
      return fd;
    }
    last_error = errno;
    close(fd);
  }
  freeaddrinfo(list);
  throw BenchError("rendezvous: cannot listen on " + address + ": " + errno_text(last_error) +
                   (last_error == EADDRINUSE ? " (another job uses that port: pick another)" : ""));
}

Rendezvous::Rendezvous(int rank, int nranks, const std::string& address, int listen_fd,
                       std::uint64_t fingerprint, double timeout_s)
    : rank_(rank), nranks_(nranks), timeout_s_(timeout_s) {
  if (rank == 0) {
    int fd = listen_fd;
    if (fd < 0) {
      std::string bound;
      fd = listen_tcp(address, &bound);
    }
    try {
      serve(fd, fingerprint);
    } catch (...) {
      close(fd);
      throw;
    }
    close(fd);
  } else {
    join(address, fingerprint);
  }
}

Rendezvous::~Rendezvous() {
  for (const int fd : peers_) {
    if (fd >= 0) {
      close(fd);
    }
  }
}

void Rendezvous::serve(int listen_fd, std::uint64_t fingerprint) {
  peers_.assign(static_cast<std::size_t>(nranks_), -1);
  const auto deadline = deadline_after(timeout_s_);
  int joined = 1;
  while (joined < nranks_) {
    wait_fd(listen_fd, POLLIN, deadline,
            "waiting for " + std::to_string(nranks_ - joined) + " of " +
                std::to_string(nranks_ - 1) + " ranks to join");
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        continue;
      }
      throw BenchError("rendezvous: accept failed: " + errno_text(errno));
    }
    set_nodelay(fd);
    Frame hello;
    try {
      hello = read_frame(fd, deadline, "reading a rank's hello");
    } catch (...) {
      close(fd);
      throw;
    }
    std::string refusal;
    if (hello.kind != Kind::Hello || hello.payload.size() != 16) {
      refusal = "malformed hello";
    } else if (hello.rank <= 0 || hello.rank >= nranks_) {
      refusal =
          "rank " + std::to_string(hello.rank) + " is outside 1.." + std::to_string(nranks_ - 1);
    } else if (peers_[static_cast<std::size_t>(hello.rank)] >= 0) {
      refusal = "rank " + std::to_string(hello.rank) + " joined twice";
    } else if (decode_u64(hello.payload, 0) != static_cast<std::uint64_t>(nranks_)) {
      refusal = "rank " + std::to_string(hello.rank) + " was started with --nranks " +
                std::to_string(decode_u64(hello.payload, 0)) + ", rank 0 with " +
                std::to_string(nranks_);
    } else if (decode_u64(hello.payload, 8) != fingerprint) {
      refusal = "rank " + std::to_string(hello.rank) +
                " was started with different options (mode, sizes, iterations, window, api, "
                "memory, ...); start every rank with the same command line";
    }
    if (!refusal.empty()) {
      try {
        send_frame(fd, Kind::Error, 0, refusal, deadline, "refusing a rank");
      } catch (const BenchError&) {
      }
      close(fd);
      throw BenchError("rendezvous: " + refusal);
    }
    peers_[static_cast<std::size_t>(hello.rank)] = fd;
    ++joined;
  }
  for (int r = 1; r < nranks_; ++r) {
    send_frame(peers_[static_cast<std::size_t>(r)], Kind::Welcome, 0, {}, deadline,
               "welcoming rank " + std::to_string(r));
  }
}

void Rendezvous::join(const std::string& address, std::uint64_t fingerprint) {
  const HostPort hp = split_host_port(address);
  const auto deadline = deadline_after(timeout_s_);
  int fd = -1;
  int last_error = 0;
  while (fd < 0) {
    addrinfo* list = resolve(hp, false);
    for (addrinfo* ai = list; ai != nullptr && fd < 0; ai = ai->ai_next) {
      const int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (s < 0) {
        last_error = errno;
        continue;
      }
      if (::connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
        fd = s;
      } else {
        last_error = errno;
        close(s);
      }
    }
    freeaddrinfo(list);
    if (fd < 0) {
      if (Clock::now() >= deadline) {
        throw BenchError("rendezvous: cannot reach rank 0 at " + address + ": " +
                         errno_text(last_error) +
                         " (is rank 0 running, with the same --rendezvous, and reachable?)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  set_nodelay(fd);
  peers_.assign(1, fd);
  send_frame(fd, Kind::Hello, rank_,
             encode_u64(static_cast<std::uint64_t>(nranks_)) + encode_u64(fingerprint), deadline,
             "saying hello to rank 0");
  const Frame welcome = read_frame(fd, deadline, "waiting for rank 0 to gather every rank");
  if (welcome.kind != Kind::Welcome) {
    throw BenchError("rendezvous: unexpected reply from rank 0");
  }
}

std::vector<std::string> Rendezvous::allgather(std::string_view blob) {
  const auto deadline = deadline_after(timeout_s_);
  std::vector<std::string> all(static_cast<std::size_t>(nranks_));
  if (rank_ == 0) {
    all[0] = std::string(blob);
    for (int r = 1; r < nranks_; ++r) {
      const std::string what = "waiting for rank " + std::to_string(r);
      Frame f = read_frame(peers_[static_cast<std::size_t>(r)], deadline, what);
      if (f.kind != Kind::Data || f.rank != r) {
        throw BenchError("rendezvous: rank " + std::to_string(r) + " is out of step");
      }
      all[static_cast<std::size_t>(r)] = std::move(f.payload);
    }
    std::string packed;
    for (const auto& part : all) {
      const auto len = static_cast<std::uint32_t>(part.size());
      packed.append(reinterpret_cast<const char*>(&len), sizeof(len));
      packed += part;
    }
    for (int r = 1; r < nranks_; ++r) {
      send_frame(peers_[static_cast<std::size_t>(r)], Kind::All, 0, packed, deadline,
                 "sending to rank " + std::to_string(r));
    }
    return all;
  }
  send_frame(peers_[0], Kind::Data, rank_, blob, deadline, "sending to rank 0");
  const Frame f = read_frame(peers_[0], deadline, "waiting for rank 0");
  if (f.kind != Kind::All) {
    throw BenchError("rendezvous: rank 0 is out of step");
  }
  std::size_t at = 0;
  for (auto& part : all) {
    std::uint32_t len = 0;
    if (at + sizeof(len) > f.payload.size()) {
      throw BenchError("rendezvous: truncated exchange from rank 0");
    }
    std::memcpy(&len, f.payload.data() + at, sizeof(len));
    at += sizeof(len);
    if (at + len > f.payload.size()) {
      throw BenchError("rendezvous: truncated exchange from rank 0");
    }
    part = f.payload.substr(at, len);
    at += len;
  }
  return all;
}

void Rendezvous::barrier() {
  allgather({});
}

void Rendezvous::check_alive() {
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    const int fd = peers_[i];
    if (fd < 0) {
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) {
      continue;
    }
    char byte = 0;
    const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      const int peer = rank_ == 0 ? static_cast<int>(i) : 0;
      throw BenchError("rank " + std::to_string(peer) +
                       " has gone (its rendezvous connection closed): see its error above");
    }
  }
}

}  // namespace roce::bench
