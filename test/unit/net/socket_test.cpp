// Non-blocking bootstrap sockets on loopback (127.0.7.0/24, this suite's block): nothing blocks,
// partial reads and writes resume, and every failure mode is reported with its own kind.
#include "net/socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <numeric>
#include <thread>

#include "hang_bound.h"
#include "result_checks.h"

namespace {

using roce::net::Clock;
using roce::net::Connector;
using roce::net::FramedChannel;
using roce::net::IoStatus;
using roce::net::Listener;
using roce::net::Socket;
using roce::net::SocketAddress;
using roce::net::SocketError;
using roce::net::SocketErrorKind;
using roce::test::failure_of;
using roce::test::value_of;

constexpr auto kGenerous = roce::test::kHangBound;
// Bounded polling so a broken state machine fails the test instead of hanging it.
constexpr int kMaxPolls = 200000;

SocketAddress address(const char* text) {
  return value_of(SocketAddress::parse(text));
}

Listener listen_on(const char* text) {
  return value_of(Listener::open(address(text)));
}

// Drives connect and accept in turn on one thread, as NCCL's GDR probe does.
std::pair<Socket, Socket> connect_pair(Listener& listener) {
  std::optional<Connector> connector =
      value_of(Connector::start(listener.address(), Clock::now() + kGenerous));
  Socket client;
  Socket server;
  bool client_done = false;
  bool server_done = false;
  for (int i = 0; i < kMaxPolls && !(client_done && server_done); ++i) {
    SocketError socket_error;
    if (!client_done) {
      const IoStatus status = connector->progress(&client, &socket_error);
      INFO(socket_error.message);
      REQUIRE(status != IoStatus::Error);
      client_done = status == IoStatus::Done;
    }
    if (!server_done) {
      const IoStatus status = listener.accept(&server, &socket_error);
      INFO(socket_error.message);
      REQUIRE(status != IoStatus::Error);
      server_done = status == IoStatus::Done;
    }
  }
  REQUIRE(client_done);
  REQUIRE(server_done);
  return {std::move(client), std::move(server)};
}

IoStatus receive_until_done(FramedChannel& channel, std::vector<uint8_t>* message) {
  for (int i = 0; i < kMaxPolls; ++i) {
    const IoStatus status = channel.receive(message);
    if (status != IoStatus::InProgress) {
      return status;
    }
  }
  return IoStatus::InProgress;
}

IoStatus flush_until_done(FramedChannel& channel) {
  for (int i = 0; i < kMaxPolls; ++i) {
    const IoStatus status = channel.flush();
    if (status != IoStatus::InProgress) {
      return status;
    }
  }
  return IoStatus::InProgress;
}

std::vector<uint8_t> pattern(size_t size, uint8_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<uint8_t>(seed + i * 7);
  }
  return bytes;
}

void raw_send(int fd, std::span<const uint8_t> bytes) {
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(bytes.size()));
}

std::vector<uint8_t> frame_header(uint32_t length) {
  return {static_cast<uint8_t>(length), static_cast<uint8_t>(length >> 8),
          static_cast<uint8_t>(length >> 16), static_cast<uint8_t>(length >> 24)};
}

}  // namespace

TEST_CASE("addresses parse from text and print back", "[socket]") {
  CHECK(address("127.0.7.1:5000").to_string() == "127.0.7.1:5000");
  CHECK(address("127.0.7.1").port() == 0);
  CHECK(address("[::1]:80").to_string() == "[::1]:80");
  CHECK(address("::1").family() == roce::AddressFamily::Ipv6);
  CHECK(address("fd00::7").to_string() == "[fd00::7]:0");
  CHECK_THAT(failure_of(SocketAddress::parse("127.0.7.1:70000")), Catch::Contains("port '70000'"));
  CHECK_THAT(failure_of(SocketAddress::parse("host:1")),
             Catch::Contains("not an IPv4 or IPv6 address"));
  CHECK_THAT(failure_of(SocketAddress::parse("[::1")), Catch::Contains("missing ']'"));
  CHECK_THAT(failure_of(SocketAddress::parse("[::1]x")), Catch::Contains("expected ':port'"));
  const SocketAddress a = address("127.0.7.9:1234");
  CHECK(SocketAddress::from_bytes(a.family(), a.bytes(), a.port()) == a);
}

TEST_CASE("a listener binds port 0 to a real port, non-blocking and close-on-exec", "[socket]") {
  Listener listener = listen_on("127.0.7.1:0");
  CHECK(listener.address().port() != 0);
  CHECK(listener.address().to_string().rfind("127.0.7.1:", 0) == 0);
  CHECK((fcntl(listener.fd(), F_GETFL) & O_NONBLOCK) != 0);
  CHECK((fcntl(listener.fd(), F_GETFD) & FD_CLOEXEC) != 0);
  int reuse = 0;
  socklen_t length = sizeof(reuse);
  REQUIRE(getsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &reuse, &length) == 0);
  CHECK(reuse != 0);
}

TEST_CASE("binding an address this node does not have names the address and the cause",
          "[socket]") {
  const std::string error = failure_of(Listener::open(address("192.0.2.77:0")));
  CHECK_THAT(error, Catch::Contains("192.0.2.77:0") && Catch::Contains("EADDRNOTAVAIL") &&
                        Catch::Contains("no interface of this node has that address"));
}

TEST_CASE("accept with nothing pending returns InProgress at once", "[socket]") {
  Listener listener = listen_on("127.0.7.1:0");
  Socket socket;
  SocketError error;
  // "At once" is the listener's O_NONBLOCK, checked as such: a clock would only measure the
  // machine's load. A blocking accept would hang here (and ctest would report it).
  CHECK((fcntl(listener.fd(), F_GETFL) & O_NONBLOCK) != 0);
  for (int i = 0; i < 100; ++i) {
    CHECK(listener.accept(&socket, &error) == IoStatus::InProgress);
  }
  CHECK_FALSE(socket.valid());
}

TEST_CASE("connect and accept progress to a connected pair when polled from one thread",
          "[socket]") {
  Listener listener = listen_on("127.0.7.2:0");
  auto [client, server] = connect_pair(listener);
  CHECK(client.valid());
  CHECK(server.valid());
  CHECK(client.peer() == listener.address());
  // The client is not bound, so its source is the kernel's choice of loopback address.
  CHECK(server.peer().to_string().rfind("127.", 0) == 0);
  CHECK((fcntl(server.fd(), F_GETFL) & O_NONBLOCK) != 0);
  CHECK((fcntl(client.fd(), F_GETFD) & FD_CLOEXEC) != 0);
}

TEST_CASE("an IPv6 loopback listener accepts and frames the same way", "[socket]") {
  Listener listener = listen_on("[::1]:0");
  CHECK(listener.address().family() == roce::AddressFamily::Ipv6);
  auto [client, server] = connect_pair(listener);
  FramedChannel sender(std::move(client), Clock::now() + kGenerous);
  FramedChannel receiver(std::move(server), Clock::now() + kGenerous);
  const std::vector<uint8_t> message = pattern(100, 3);
  REQUIRE(sender.queue(message));
  REQUIRE(flush_until_done(sender) == IoStatus::Done);
  std::vector<uint8_t> got;
  REQUIRE(receive_until_done(receiver, &got) == IoStatus::Done);
  CHECK(got == message);
}

TEST_CASE("a listener takes hundreds of simultaneous connections", "[socket]") {
  Listener listener = listen_on("127.0.7.3:0");
  constexpr int kConnections = 300;
  std::vector<Connector> connectors;
  for (int i = 0; i < kConnections; ++i) {
    connectors.push_back(value_of(Connector::start(listener.address(), Clock::now() + kGenerous)));
  }
  std::vector<Socket> clients(kConnections);
  std::vector<bool> connected(kConnections, false);
  std::vector<Socket> accepted;
  int connected_count = 0;
  for (int poll = 0;
       poll < kMaxPolls && (connected_count < kConnections || accepted.size() < kConnections);
       ++poll) {
    for (int i = 0; i < kConnections; ++i) {
      if (!connected[static_cast<size_t>(i)]) {
        SocketError socket_error;
        const IoStatus status = connectors[static_cast<size_t>(i)].progress(
            &clients[static_cast<size_t>(i)], &socket_error);
        INFO(socket_error.message);
        REQUIRE(status != IoStatus::Error);
        if (status == IoStatus::Done) {
          connected[static_cast<size_t>(i)] = true;
          ++connected_count;
        }
      }
    }
    Socket socket;
    SocketError socket_error;
    while (listener.accept(&socket, &socket_error) == IoStatus::Done) {
      accepted.push_back(std::move(socket));
    }
  }
  CHECK(connected_count == kConnections);
  CHECK(accepted.size() == static_cast<size_t>(kConnections));
}

TEST_CASE("framed messages of every size arrive whole and in order", "[socket]") {
  Listener listener = listen_on("127.0.7.4:0");
  auto [client, server] = connect_pair(listener);
  FramedChannel sender(std::move(client), Clock::now() + kGenerous);
  FramedChannel receiver(std::move(server), Clock::now() + kGenerous);
  const std::vector<size_t> sizes = {
      0, 1, 3, 4, 5, 100, 4096, 65535, FramedChannel::kDefaultMaxFrame};
  for (size_t i = 0; i < sizes.size(); ++i) {
    REQUIRE(sender.queue(pattern(sizes[i], static_cast<uint8_t>(i))));
  }
  std::vector<std::vector<uint8_t>> received;
  for (int poll = 0; poll < kMaxPolls && received.size() < sizes.size(); ++poll) {
    REQUIRE(sender.flush() != IoStatus::Error);
    std::vector<uint8_t> message;
    const IoStatus status = receiver.receive(&message);
    INFO(receiver.error().message);
    REQUIRE(status != IoStatus::Error);
    if (status == IoStatus::Done) {
      received.push_back(std::move(message));
    }
  }
  REQUIRE(received.size() == sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    CHECK(received[i] == pattern(sizes[i], static_cast<uint8_t>(i)));
  }
}

TEST_CASE("a frame trickling in one byte at a time is assembled across calls", "[socket]") {
  Listener listener = listen_on("127.0.7.5:0");
  auto [client, server] = connect_pair(listener);
  FramedChannel receiver(std::move(server), Clock::now() + kGenerous);
  const std::vector<uint8_t> body = pattern(10, 9);
  std::vector<uint8_t> wire = frame_header(10);
  wire.insert(wire.end(), body.begin(), body.end());
  std::vector<uint8_t> message;
  for (size_t i = 0; i < wire.size(); ++i) {
    CHECK(receiver.receive(&message) == IoStatus::InProgress);
    raw_send(client.fd(), std::span<const uint8_t>(wire).subspan(i, 1));
  }
  REQUIRE(receive_until_done(receiver, &message) == IoStatus::Done);
  CHECK(message == body);
}

TEST_CASE("a large message through a small send buffer resumes after partial writes", "[socket]") {
  Listener listener = listen_on("127.0.7.6:0");
  auto [client, server] = connect_pair(listener);
  // Only the send side is shrunk: a tiny receive window below loopback's 64 KiB MSS would make
  // TCP's silly-window avoidance crawl on persist probes.
  const int small = 65536;
  REQUIRE(setsockopt(client.fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
  FramedChannel sender(std::move(client), Clock::now() + kGenerous, 8 << 20);
  FramedChannel receiver(std::move(server), Clock::now() + kGenerous, 8 << 20);
  const std::vector<uint8_t> message = pattern(8 << 20, 5);
  REQUIRE(sender.queue(message));
  CHECK(sender.flush() == IoStatus::InProgress);  // cannot fit: the write is partial
  std::vector<uint8_t> got;
  bool sent = false;
  bool received = false;
  const auto give_up = Clock::now() + kGenerous;
  while (!(sent && received) && Clock::now() < give_up) {
    if (!sent) {
      const IoStatus status = sender.flush();
      REQUIRE(status != IoStatus::Error);
      sent = status == IoStatus::Done;
    }
    if (!received) {
      const IoStatus status = receiver.receive(&got);
      REQUIRE(status != IoStatus::Error);
      received = status == IoStatus::Done;
    }
  }
  REQUIRE(received);
  CHECK(got == message);
}

TEST_CASE("an announced frame above the limit is refused before its body is read", "[socket]") {
  Listener listener = listen_on("127.0.7.7:0");
  auto [client, server] = connect_pair(listener);
  FramedChannel receiver(std::move(server), Clock::now() + kGenerous, 1024);
  raw_send(client.fd(), frame_header(0xfffffff0U));
  std::vector<uint8_t> message;
  REQUIRE(receive_until_done(receiver, &message) == IoStatus::Error);
  CHECK(receiver.error().kind == SocketErrorKind::Oversized);
  CHECK_THAT(receiver.error().message,
             Catch::Contains("announced a frame of 4294967280 bytes, above the limit of 1024"));
  // Errors are sticky.
  CHECK(receiver.receive(&message) == IoStatus::Error);
  CHECK(receiver.flush() == IoStatus::Error);
}

TEST_CASE("queueing a message above the limit is refused", "[socket]") {
  Listener listener = listen_on("127.0.7.7:0");
  auto [client, server] = connect_pair(listener);
  FramedChannel sender(std::move(client), Clock::now() + kGenerous, 16);
  CHECK(sender.queue(pattern(16, 1)));
  CHECK_FALSE(sender.queue(pattern(17, 1)));
  CHECK(sender.error().kind == SocketErrorKind::Oversized);
  CHECK(sender.flush() == IoStatus::Error);
}

TEST_CASE("a peer closing inside a frame is reported as truncated", "[socket]") {
  Listener listener = listen_on("127.0.7.8:0");
  SECTION("inside the body") {
    auto [client, server] = connect_pair(listener);
    FramedChannel receiver(std::move(server), Clock::now() + kGenerous);
    std::vector<uint8_t> wire = frame_header(100);
    const std::vector<uint8_t> part = pattern(10, 1);
    wire.insert(wire.end(), part.begin(), part.end());
    raw_send(client.fd(), wire);
    client = Socket();
    std::vector<uint8_t> message;
    REQUIRE(receive_until_done(receiver, &message) == IoStatus::Error);
    CHECK(receiver.error().kind == SocketErrorKind::Truncated);
    CHECK_THAT(receiver.error().message, Catch::Contains("10 of 100 body bytes"));
  }
  SECTION("inside the header") {
    auto [client, server] = connect_pair(listener);
    FramedChannel receiver(std::move(server), Clock::now() + kGenerous);
    raw_send(client.fd(), std::vector<uint8_t>{1, 0});
    client = Socket();
    std::vector<uint8_t> message;
    REQUIRE(receive_until_done(receiver, &message) == IoStatus::Error);
    CHECK(receiver.error().kind == SocketErrorKind::Truncated);
    CHECK_THAT(receiver.error().message, Catch::Contains("2 of 4 header bytes"));
  }
}

TEST_CASE("a peer closing between frames is reported as closed", "[socket]") {
  Listener listener = listen_on("127.0.7.9:0");
  auto [client, server] = connect_pair(listener);
  FramedChannel receiver(std::move(server), Clock::now() + kGenerous);
  client = Socket();
  std::vector<uint8_t> message;
  REQUIRE(receive_until_done(receiver, &message) == IoStatus::Error);
  CHECK(receiver.error().kind == SocketErrorKind::PeerClosed);
  CHECK_THAT(receiver.error().message, Catch::Contains("closed the connection"));
}

TEST_CASE("a reset connection is reported as reset, for reads and for writes", "[socket]") {
  Listener listener = listen_on("127.0.7.10:0");
  SECTION("read") {
    auto [client, server] = connect_pair(listener);
    FramedChannel receiver(std::move(server), Clock::now() + kGenerous);
    const linger abort_on_close{1, 0};
    REQUIRE(setsockopt(client.fd(), SOL_SOCKET, SO_LINGER, &abort_on_close,
                       sizeof(abort_on_close)) == 0);
    client = Socket();  // close with linger 0 sends RST
    std::vector<uint8_t> message;
    REQUIRE(receive_until_done(receiver, &message) == IoStatus::Error);
    CHECK(receiver.error().kind == SocketErrorKind::Reset);
    CHECK_THAT(receiver.error().message, Catch::Contains("reset by the peer"));
  }
  SECTION("write, without SIGPIPE killing the process") {
    auto [client, server] = connect_pair(listener);
    FramedChannel sender(std::move(client), Clock::now() + kGenerous, 1 << 20);
    server = Socket();
    IoStatus status = IoStatus::Done;
    for (int i = 0; i < 1000 && status != IoStatus::Error; ++i) {
      REQUIRE(sender.queue(pattern(1 << 16, 1)));
      status = sender.flush();
    }
    REQUIRE(status == IoStatus::Error);
    CHECK((sender.error().kind == SocketErrorKind::Reset ||
           sender.error().kind == SocketErrorKind::PeerClosed));
  }
}

TEST_CASE("a silent peer makes the channel time out at its deadline", "[socket]") {
  Listener listener = listen_on("127.0.7.11:0");
  auto [client, server] = connect_pair(listener);
  const auto start = Clock::now();
  FramedChannel receiver(std::move(server), start + std::chrono::milliseconds(50));
  std::vector<uint8_t> message;
  IoStatus status = IoStatus::InProgress;
  while (status == IoStatus::InProgress && Clock::now() - start < kGenerous) {
    status = receiver.receive(&message);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(status == IoStatus::Error);
  CHECK(receiver.error().kind == SocketErrorKind::Timeout);
  CHECK_THAT(receiver.error().message,
             Catch::Contains("timed out") && Catch::Contains("NCCL_ROCE_CONNECT_TIMEOUT_MS"));
  CHECK(Clock::now() - start >= std::chrono::milliseconds(50));
}

TEST_CASE("connecting where nobody listens is refused with a hint", "[socket]") {
  SocketAddress closed;
  {
    Listener listener = listen_on("127.0.7.12:0");
    closed = listener.address();
  }
  std::optional<Connector> connector = value_of(Connector::start(closed, Clock::now() + kGenerous));
  Socket socket;
  SocketError socket_error;
  IoStatus status = IoStatus::InProgress;
  for (int i = 0; i < kMaxPolls && status == IoStatus::InProgress; ++i) {
    status = connector->progress(&socket, &socket_error);
  }
  REQUIRE(status == IoStatus::Error);
  CHECK(socket_error.kind == SocketErrorKind::Refused);
  CHECK_THAT(socket_error.message, Catch::Contains(closed.to_string()) &&
                                       Catch::Contains("ECONNREFUSED") &&
                                       Catch::Contains("nothing listens there"));
}

TEST_CASE("a connect that the peer never completes times out at its deadline", "[socket]") {
  // A raw listener with the smallest backlog, kept full: further SYNs are dropped, so the
  // connect stays in progress until the deadline.
  const SocketAddress bind_address = address("127.0.7.13:0");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  roce::net::FileDescriptor owner(fd);
  REQUIRE(::bind(fd, bind_address.raw(), bind_address.raw_length()) == 0);
  REQUIRE(::listen(fd, 0) == 0);
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) == 0);
  const SocketAddress target =
      *SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&storage), length);

  std::vector<Connector> fillers;
  const auto start = Clock::now();
  std::optional<Connector> last;
  IoStatus status = IoStatus::InProgress;
  SocketError socket_error;
  // Open connections until one stays pending; each filler is progressed to completion first.
  for (int attempt = 0; attempt < 8 && status != IoStatus::Error; ++attempt) {
    last = value_of(Connector::start(target, Clock::now() + std::chrono::milliseconds(300)));
    Socket socket;
    status = IoStatus::InProgress;
    while (status == IoStatus::InProgress && Clock::now() - start < kGenerous) {
      status = last->progress(&socket, &socket_error);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (status == IoStatus::Done) {
      fillers.push_back(std::move(*last));
    }
  }
  REQUIRE(status == IoStatus::Error);
  CHECK(socket_error.kind == SocketErrorKind::Timeout);
  CHECK_THAT(socket_error.message, Catch::Contains("timed out"));
}
