// The peer watch (net/peer_watch.h): its frames, the keepalive plan, and the watcher over a
// loopback TCP pair: a peer that closes without goodbye after its hello is gone; one that says
// goodbye, or never said hello (a peer that does not watch), is not.
#include "net/peer_watch.h"

#include <sys/socket.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <thread>

#include "hang_bound.h"
#include "net/handshake.h"
#include "result_checks.h"

namespace {

using roce::net::Clock;
using roce::net::Connector;
using roce::net::encode_watch_frame;
using roce::net::IoStatus;
using roce::net::keepalive_plan;
using roce::net::kWatchFrameSize;
using roce::net::Listener;
using roce::net::PeerState;
using roce::net::PeerWatch;
using roce::net::Socket;
using roce::net::SocketAddress;
using roce::net::SocketError;
using roce::net::WatchFrameParser;
using roce::net::WatchSignal;
using roce::test::value_of;

constexpr uint64_t kNonce = 0x1122334455667788ULL;

std::pair<Socket, Socket> connect_pair(const char* where) {
  Listener listener = value_of(Listener::open(value_of(SocketAddress::parse(where))));
  std::optional<Connector> connector =
      value_of(Connector::start(listener.address(), Clock::now() + roce::test::kHangBound));
  Socket client;
  Socket server;
  bool client_done = false;
  bool server_done = false;
  const auto deadline = Clock::now() + roce::test::kHangBound;
  while (!(client_done && server_done) && Clock::now() < deadline) {
    SocketError error;
    if (!client_done) {
      const IoStatus status = connector->progress(&client, &error);
      REQUIRE(status != IoStatus::Error);
      client_done = status == IoStatus::Done;
    }
    if (!server_done) {
      const IoStatus status = listener.accept(&server, &error);
      REQUIRE(status != IoStatus::Error);
      server_done = status == IoStatus::Done;
    }
  }
  REQUIRE(client_done);
  REQUIRE(server_done);
  return {std::move(client), std::move(server)};
}

void send_frame(const Socket& socket, WatchSignal signal, uint64_t nonce = kNonce) {
  const auto frame = encode_watch_frame(signal, nonce);
  REQUIRE(::send(socket.fd(), frame.data(), frame.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(frame.size()));
}

// A watched socket (the server end) with its state, and a counter of the nudges.
struct Watched {
  std::shared_ptr<std::atomic<int>> nudges = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<PeerState> state;
  std::unique_ptr<PeerWatch> watch;
  Socket peer;  // the client end: the "peer process"

  explicit Watched(const char* where) {
    auto [client, server] = connect_pair(where);
    peer = std::move(client);
    state = std::make_shared<PeerState>([n = nudges] { ++*n; });
    watch = value_of(PeerWatch::start(std::move(server), kNonce, 20, state, "test peer"));
  }
};

// Polls until `done` or the hang bound; true when it happened.
template <typename Done>
bool eventually(Done done) {
  const auto deadline = Clock::now() + roce::test::kHangBound;
  while (!done()) {
    if (Clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST_CASE("peer watch frames round-trip, whole or in pieces", "[peer-watch]") {
  const auto hello = encode_watch_frame(WatchSignal::Hello, kNonce);
  const auto goodbye = encode_watch_frame(WatchSignal::Goodbye, kNonce);
  REQUIRE(hello.size() == kWatchFrameSize);
  // The handshake's framing: length 20, then its header with kind 5.
  CHECK(hello[0] == 20);
  CHECK(hello[10] == 5);
  CHECK(goodbye[10] == 6);

  WatchFrameParser parser(kNonce);
  std::string detail;
  size_t used = 0;
  CHECK(parser.feed(hello, &used, &detail) == WatchFrameParser::Event::Hello);
  CHECK(used == kWatchFrameSize);
  // Byte by byte: nothing until the last byte.
  for (size_t i = 0; i + 1 < goodbye.size(); ++i) {
    CHECK(parser.feed(std::span(goodbye).subspan(i, 1), &used, &detail) ==
          WatchFrameParser::Event::None);
    CHECK(used == 1);
  }
  CHECK(parser.feed(std::span(goodbye).subspan(goodbye.size() - 1), &used, &detail) ==
        WatchFrameParser::Event::Goodbye);

  // Two frames in one read: one at a time, each consuming only its own bytes.
  std::vector<uint8_t> both(hello.begin(), hello.end());
  both.insert(both.end(), goodbye.begin(), goodbye.end());
  WatchFrameParser second(kNonce);
  CHECK(second.feed(both, &used, &detail) == WatchFrameParser::Event::Hello);
  CHECK(used == kWatchFrameSize);
  CHECK(second.feed(std::span(both).subspan(used), &used, &detail) ==
        WatchFrameParser::Event::Goodbye);
}

TEST_CASE("peer watch frames of another connection or another kind are refused", "[peer-watch]") {
  std::string detail;
  size_t used = 0;
  WatchFrameParser wrong_nonce(kNonce + 1);
  CHECK(wrong_nonce.feed(encode_watch_frame(WatchSignal::Hello, kNonce), &used, &detail) ==
        WatchFrameParser::Event::Invalid);
  CHECK_THAT(detail, Catch::Contains("nonce"));

  auto frame = encode_watch_frame(WatchSignal::Hello, kNonce);
  frame[10] = 3;  // Ready: a handshake message, not a watch signal
  WatchFrameParser wrong_kind(kNonce);
  CHECK(wrong_kind.feed(frame, &used, &detail) == WatchFrameParser::Event::Invalid);
  CHECK_THAT(detail, Catch::Contains("kind 3"));
  // Sticky: whatever follows is refused too.
  CHECK(wrong_kind.feed(encode_watch_frame(WatchSignal::Goodbye, kNonce), &used, &detail) ==
        WatchFrameParser::Event::Invalid);

  frame = encode_watch_frame(WatchSignal::Hello, kNonce);
  frame[4] = 0;  // magic
  WatchFrameParser wrong_magic(kNonce);
  CHECK(wrong_magic.feed(frame, &used, &detail) == WatchFrameParser::Event::Invalid);
}

TEST_CASE("peer watch keepalive plan bounds detection by the configured seconds", "[peer-watch]") {
  for (int t : {2, 3, 5, 10, 20, 59, 600, 3600}) {
    const auto plan = keepalive_plan(t);
    INFO("timeout " << t);
    CHECK(plan.user_timeout_ms == static_cast<unsigned>(t) * 1000U);
    CHECK(plan.idle_s >= 1);
    CHECK(plan.interval_s >= 1);
    CHECK(plan.idle_s < t);
    // Without TCP_USER_TIMEOUT the probes alone end within the bound plus one interval.
    CHECK(plan.worst_case_s() >= t);
    CHECK(plan.worst_case_s() <= t + plan.interval_s);
    // The documented bound: t + t/10 (+1 s of rounding).
    CHECK(plan.interval_s <= t / 10 + 1);
  }
  CHECK(keepalive_plan(20).idle_s == 10);
  CHECK(keepalive_plan(20).interval_s == 2);
  // Out of range is clamped (the configuration refuses it before it gets here).
  CHECK(keepalive_plan(0).user_timeout_ms == 2000U);
}

TEST_CASE("peer watch: a peer that said hello and closes without goodbye is gone", "[peer-watch]") {
  Watched w("127.0.7.31:0");
  send_frame(w.peer, WatchSignal::Hello);
  CHECK_FALSE(w.state->gone());
  w.peer = Socket();  // closed: a FIN, as a killed process's kernel sends
  REQUIRE(eventually([&] { return w.state->gone(); }));
  CHECK(*w.nudges == 1);
  CHECK_THAT(w.state->reason(), Catch::Contains("peer process gone"));
  CHECK_THAT(w.state->reason(), Catch::Contains("without goodbye"));
  CHECK_THAT(w.state->reason(), Catch::Contains("test peer"));
  // The watcher let the socket go; the comm's close then finds nothing to remove.
  REQUIRE(eventually([&] { return roce::net::watched_socket_count() == 0; }));
  w.watch.reset();
}

TEST_CASE("peer watch: a reset after hello is gone too", "[peer-watch]") {
  Watched w("127.0.7.32:0");
  send_frame(w.peer, WatchSignal::Hello);
  const linger reset{1, 0};  // close sends a reset
  REQUIRE(setsockopt(w.peer.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)) == 0);
  w.peer = Socket();
  REQUIRE(eventually([&] { return w.state->gone(); }));
  CHECK_THAT(w.state->reason(), Catch::Contains("peer process gone"));
}

TEST_CASE("peer watch: a goodbye before the close fails nothing", "[peer-watch]") {
  Watched w("127.0.7.33:0");
  send_frame(w.peer, WatchSignal::Hello);
  send_frame(w.peer, WatchSignal::Goodbye);
  w.peer = Socket();
  REQUIRE(eventually([] { return roce::net::watched_socket_count() == 0; }));
  CHECK_FALSE(w.state->gone());
  // Marked closed (a recovery epoch waiting for this peer's answer stops waiting), and the
  // comm's health check nudged once to see it.
  CHECK(w.state->closed());
  CHECK(*w.nudges == 1);
}

TEST_CASE("peer watch: a peer that never said hello does not watch, and is not marked",
          "[peer-watch]") {
  Watched w("127.0.7.34:0");
  w.peer = Socket();
  REQUIRE(eventually([] { return roce::net::watched_socket_count() == 0; }));
  CHECK_FALSE(w.state->gone());
}

TEST_CASE("peer watch: closing the comm sends goodbye and leaves nothing watched", "[peer-watch]") {
  Watched w("127.0.7.35:0");
  REQUIRE(roce::net::watched_socket_count() == 1);
  w.watch.reset();
  CHECK(roce::net::watched_socket_count() == 0);
  // The peer reads the goodbye, then the end of the stream.
  std::array<uint8_t, kWatchFrameSize> got{};
  size_t have = 0;
  const auto deadline = Clock::now() + roce::test::kHangBound;
  while (have < got.size() && Clock::now() < deadline) {
    const ssize_t n = ::recv(w.peer.fd(), got.data() + have, got.size() - have, MSG_DONTWAIT);
    if (n > 0) {
      have += static_cast<size_t>(n);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  CHECK(got == encode_watch_frame(WatchSignal::Goodbye, kNonce));
}

TEST_CASE("peer watch: closes racing the watcher thread", "[peer-watch]") {
  // Many connections whose peers close while their comms close: every removal is under the
  // watcher's lock, so this is for the sanitizers (TSan, ASan) to look at.
  std::vector<std::unique_ptr<Watched>> all;
  for (int i = 0; i < 32; ++i) {
    all.push_back(std::make_unique<Watched>("127.0.7.36:0"));
    send_frame(all.back()->peer, WatchSignal::Hello);
  }
  std::thread peers([&] {
    for (size_t i = 0; i < all.size(); i += 2) {
      all[i]->peer = Socket();
    }
  });
  for (size_t i = 1; i < all.size(); i += 2) {
    all[i]->watch.reset();
  }
  peers.join();
  for (size_t i = 0; i < all.size(); i += 2) {
    all[i]->watch.reset();
  }
  CHECK(roce::net::watched_socket_count() == 0);
}

namespace {

roce::net::EpochStart epoch_start(uint32_t epoch) {
  roce::net::EpochStart f;
  f.nonce = kNonce;
  f.epoch = epoch;
  f.next_seq = 77;
  f.live_members = 1;
  f.qps = {{0, 0x321, 9}};
  f.ring_rkeys = {0x5151};
  return f;
}

std::vector<uint8_t> encoded(const roce::net::EpochFrame& frame) {
  return value_of(roce::net::encode_epoch_frame(frame));
}

// Reads from the peer's end until `count` bytes came, or the hang bound.
std::vector<uint8_t> read_exactly(const Socket& socket, size_t count) {
  std::vector<uint8_t> got(count);
  size_t have = 0;
  const auto deadline = Clock::now() + roce::test::kHangBound;
  while (have < count && Clock::now() < deadline) {
    const ssize_t n = ::recv(socket.fd(), got.data() + have, count - have, MSG_DONTWAIT);
    if (n > 0) {
      have += static_cast<size_t>(n);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  got.resize(have);
  return got;
}

}  // namespace

TEST_CASE("peer watch frames carry recovery-epoch frames between the signals", "[peer-watch]") {
  const std::vector<uint8_t> start = encoded(epoch_start(4));
  const auto goodbye = encode_watch_frame(WatchSignal::Goodbye, kNonce);
  std::vector<uint8_t> stream(start);
  stream.insert(stream.end(), goodbye.begin(), goodbye.end());
  // Whole, then byte by byte: the epoch frame, then the goodbye, each consuming its own bytes.
  WatchFrameParser whole(kNonce);
  std::string detail;
  size_t used = 0;
  REQUIRE(whole.feed(stream, &used, &detail) == WatchFrameParser::Event::Epoch);
  CHECK(used == start.size());
  CHECK(std::get<roce::net::EpochStart>(whole.take_epoch()) == epoch_start(4));
  CHECK(whole.feed(std::span(stream).subspan(used), &used, &detail) ==
        WatchFrameParser::Event::Goodbye);
  WatchFrameParser pieces(kNonce);
  std::vector<WatchFrameParser::Event> events;
  for (size_t i = 0; i < stream.size(); ++i) {
    const auto event = pieces.feed(std::span(stream).subspan(i, 1), &used, &detail);
    CHECK(used == 1);
    if (event != WatchFrameParser::Event::None) {
      events.push_back(event);
    }
  }
  CHECK(events == std::vector{WatchFrameParser::Event::Epoch, WatchFrameParser::Event::Goodbye});

  // Another connection's frame, a length past the bound, a valid length with a bad body.
  WatchFrameParser other(kNonce + 1);
  CHECK(other.feed(start, &used, &detail) == WatchFrameParser::Event::Invalid);
  CHECK_THAT(detail, Catch::Contains("epoch frame") && Catch::Contains("nonce"));
  std::vector<uint8_t> huge(start);
  huge[2] = 1;  // length + 65536
  WatchFrameParser bounded(kNonce);
  CHECK(bounded.feed(huge, &used, &detail) == WatchFrameParser::Event::Invalid);
  CHECK_THAT(detail, Catch::Contains("not a watch or epoch frame"));
  std::vector<uint8_t> bad(start);
  bad[4 + 20] = 0;  // epoch 0
  bad[4 + 21] = 0;
  WatchFrameParser refused(kNonce);
  CHECK(refused.feed(bad, &used, &detail) == WatchFrameParser::Event::Invalid);
  CHECK_THAT(detail, Catch::Contains("epoch 0"));
}

TEST_CASE("peer watch: epoch frames reach the comm's mailbox, and its frames reach the peer",
          "[peer-watch]") {
  Watched w("127.0.7.37:0");
  send_frame(w.peer, WatchSignal::Hello);
  const std::vector<uint8_t> start = encoded(epoch_start(1));
  REQUIRE(::send(w.peer.fd(), start.data(), start.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(start.size()));
  REQUIRE(eventually([&] { return w.state->has_epoch_frames(); }));
  CHECK(*w.nudges == 1);
  const auto frames = w.state->take_epoch_frames();
  REQUIRE(frames.size() == 1);
  CHECK(std::get<roce::net::EpochStart>(frames[0]) == epoch_start(1));
  CHECK_FALSE(w.state->has_epoch_frames());
  CHECK_FALSE(w.state->gone());

  // The other way: two frames sent by the comm arrive whole and in order.
  roce::net::EpochWanted wanted;
  wanted.nonce = kNonce;
  wanted.down_members = 1;
  const std::vector<uint8_t> first = encoded(wanted);
  const std::vector<uint8_t> second = encoded(epoch_start(2));
  REQUIRE(w.watch->send(first));
  REQUIRE(w.watch->send(second));
  std::vector<uint8_t> both(first);
  both.insert(both.end(), second.begin(), second.end());
  CHECK(read_exactly(w.peer, both.size()) == both);

  // Once the peer is gone, the socket is no longer watched and a send says so.
  w.peer = Socket();
  REQUIRE(eventually([&] { return w.state->gone(); }));
  const auto refused = w.watch->send(first);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error(), Catch::Contains("no longer watched"));
}

TEST_CASE("peer watch: a peer flooding epoch frames costs at most 8 waiting", "[peer-watch]") {
  PeerState state(nullptr);
  for (uint32_t e = 1; e <= 20; ++e) {
    state.post_epoch_frame(epoch_start(e));
  }
  const auto frames = state.take_epoch_frames();
  REQUIRE(frames.size() == PeerState::kMaxPendingEpochFrames);
  CHECK(std::get<roce::net::EpochStart>(frames.front()).epoch == 13);  // the newest 8 are kept
  CHECK(std::get<roce::net::EpochStart>(frames.back()).epoch == 20);
}
