// The shared-memory wire's inbox and senders (packet_io/shm_wire.h) without an engine: what a slot
// carries, the doorbell rule, a full ring, a sender that claims a slot and never fills it, an
// owner that goes away and one that replaces it, a file of another layout.
#include "packet_io/shm_wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "stats/stats.h"

using vroce::packet_io::InDatagram;
using vroce::packet_io::OutDatagram;
using vroce::packet_io::ShmInbox;
using vroce::packet_io::ShmMapping;
using vroce::packet_io::ShmPeers;

namespace {

sockaddr_storage ipv4(const char* text) {
  sockaddr_storage address{};
  auto& in = reinterpret_cast<sockaddr_in&>(address);
  in.sin_family = AF_INET;
  in.sin_port = htons(4791);
  REQUIRE(inet_pton(AF_INET, text, &in.sin_addr) == 1);
  return address;
}

// A prefix of this test process's own, so parallel runs and real devices never meet.
std::string test_prefix() {
  static int counter = 0;
  return "/dev/shm/vroce-wire-test." + std::to_string(::getpid()) + "." +
         std::to_string(counter++) + ".";
}

std::vector<uint8_t> packet(size_t length, uint8_t seed) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i) {
    bytes[i] = static_cast<uint8_t>(seed + i * 7);
  }
  return bytes;
}

OutDatagram datagram_to(const sockaddr_storage& dst, const std::vector<uint8_t>& bytes,
                        uint8_t traffic_class = 0x68) {
  OutDatagram d;
  d.data = bytes.data();
  d.length = bytes.size();
  d.dst = &dst;
  d.dst_len = sizeof(sockaddr_in);
  d.traffic_class = traffic_class;
  return d;
}

// Two addresses under a prefix of their own, and a sender at the first.
struct Sender {
  std::string prefix = test_prefix();
  sockaddr_storage a = ipv4("127.0.9.1");
  sockaddr_storage b = ipv4("127.0.9.2");
  ShmPeers from_a;
  Sender() { from_a.open(prefix, a, "testA"); }
};

// ... and the second one's inbox.
struct Wire : Sender {
  ShmInbox inbox_b;
  Wire() {
    std::string message;
    REQUIRE(inbox_b.open(prefix, b, &message) == 0);
  }
  // The doorbells the last batch rang, by destination.
  std::vector<std::string> ring() {
    std::vector<std::string> rung;
    from_a.ring_doorbells([&](const sockaddr_storage& address, socklen_t) {
      char text[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text,
                sizeof(text));
      rung.emplace_back(text);
    });
    return rung;
  }
};

}  // namespace

TEST_CASE("a packet written into a peer's inbox arrives whole, from the sender's address") {
  Wire wire;
  auto bytes = packet(1100, 3);
  size_t lost = 0;
  REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes, 0x6a), &lost));
  CHECK(lost == 0);
  CHECK(wire.inbox_b.arrival());

  InDatagram in[4];
  REQUIRE(wire.inbox_b.receive(in) == 1);
  REQUIRE(in[0].length == bytes.size());
  CHECK(std::memcmp(in[0].data, bytes.data(), bytes.size()) == 0);
  CHECK_FALSE(in[0].truncated);
  CHECK(in[0].traffic_class == 0x6a);
  REQUIRE(in[0].dst_known);
  const auto& src = reinterpret_cast<const sockaddr_in&>(*in[0].src);
  const auto& a = reinterpret_cast<const sockaddr_in&>(wire.a);
  CHECK(src.sin_family == AF_INET);
  CHECK(src.sin_addr.s_addr == a.sin_addr.s_addr);
  CHECK(ntohs(src.sin_port) == 4791);
  CHECK(std::memcmp(in[0].dst, &wire.b, sizeof(sockaddr_in)) == 0);
  CHECK_FALSE(wire.inbox_b.arrival());
  CHECK(wire.inbox_b.receive(in) == 0);
}

TEST_CASE("packets arrive in the order they were written, across many laps of the ring") {
  Wire wire;
  InDatagram in[64];
  uint32_t next_sent = 0;
  uint32_t next_received = 0;
  const uint32_t total = ShmInbox::kSlotCount * 5 + 17;
  while (next_received < total) {
    for (int i = 0; i < 50 && next_sent < total; ++i, ++next_sent) {
      std::vector<uint8_t> bytes(64);
      std::memcpy(bytes.data(), &next_sent, sizeof(next_sent));
      size_t lost = 0;
      REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
      REQUIRE(lost == 0);
    }
    size_t n = wire.inbox_b.receive(in);
    for (size_t i = 0; i < n; ++i, ++next_received) {
      uint32_t value = 0;
      std::memcpy(&value, in[i].data, sizeof(value));
      REQUIRE(value == next_received);
    }
  }
}

TEST_CASE("a GSO send becomes one slot per segment") {
  Wire wire;
  auto first = packet(1000, 1);
  auto second = packet(1000, 2);
  auto last = packet(300, 3);
  iovec segments[3] = {
      {first.data(), first.size()}, {second.data(), second.size()}, {last.data(), last.size()}};
  OutDatagram gso;
  gso.dst = &wire.b;
  gso.dst_len = sizeof(sockaddr_in);
  gso.segments = segments;
  gso.segment_count = 3;
  gso.segment_size = 1000;
  size_t lost = 0;
  REQUIRE(wire.from_a.deliver(gso, &lost));
  InDatagram in[8];
  REQUIRE(wire.inbox_b.receive(in) == 3);
  CHECK(in[0].length == 1000);
  CHECK(std::memcmp(in[1].data, second.data(), second.size()) == 0);
  CHECK(in[2].length == 300);
}

TEST_CASE("the doorbell rings only for a reader that said it sleeps, once per sleep") {
  Wire wire;
  auto bytes = packet(64, 9);
  size_t lost = 0;
  REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
  CHECK(wire.ring().empty());  // the reader is awake: it finds the slot by itself

  InDatagram in[4];
  REQUIRE(wire.inbox_b.receive(in) == 1);
  REQUIRE(wire.inbox_b.prepare_sleep());
  REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
  REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
  CHECK(wire.ring() == std::vector<std::string>{"127.0.9.2"});
  REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
  CHECK(wire.ring().empty());  // rung already: the reader is waking
  wire.inbox_b.end_sleep();

  // A slot filled before the reader marks itself asleep keeps it awake.
  CHECK_FALSE(wire.inbox_b.prepare_sleep());
  CHECK(wire.inbox_b.receive(in) == 3);
  CHECK(wire.inbox_b.prepare_sleep());
}

TEST_CASE("a full ring loses the packet and counts it, and takes packets again once read") {
  Wire wire;
  auto& stats = vroce::stats();
  const uint64_t full_before = stats.shm_ring_full.get();
  auto bytes = packet(128, 5);
  size_t lost = 0;
  for (uint32_t i = 0; i < ShmInbox::kSlotCount; ++i) {
    REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
  }
  REQUIRE(lost == 0);
  REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
  CHECK(lost == 1);
  CHECK(stats.shm_ring_full.get() - full_before == 1);

  InDatagram in[64];
  CHECK(wire.inbox_b.receive(in) == 64);
  // Slots are given back at the next receive, not while their bytes are being read.
  lost = 0;
  REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
  CHECK(lost == 1);
  CHECK(wire.inbox_b.receive(in) == 64);
  REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
  CHECK(lost == 1);  // the one before
}

TEST_CASE(
    "a slot claimed and never filled is passed over, and the stalled sender's publish fails") {
  Wire wire;
  ShmMapping side_door;
  std::string message;
  REQUIRE(side_door.map_existing(wire.inbox_b.path(), &message) == 0);
  // A sender that died between its claim and its publish: the claim counter moved, the slot
  // did not.
  std::atomic_ref<uint64_t>(side_door.header().tail).fetch_add(1);
  auto bytes = packet(64, 1);
  size_t lost = 0;
  REQUIRE(wire.from_a.deliver(datagram_to(wire.b, bytes), &lost));
  REQUIRE(lost == 0);

  const uint64_t abandoned_before = vroce::stats().shm_abandoned.get();
  InDatagram in[4];
  CHECK(wire.inbox_b.receive(in) == 0);  // stuck behind the claimed slot, for now
  std::this_thread::sleep_for(ShmInbox::kAbandonedSlot + std::chrono::milliseconds(50));
  REQUIRE(wire.inbox_b.receive(in) == 1);
  CHECK(std::memcmp(in[0].data, bytes.data(), bytes.size()) == 0);
  CHECK(vroce::stats().shm_abandoned.get() - abandoned_before == 1);

  // The slot went to the next lap: a late publish for the old position must not take it.
  uint64_t expected = 0;
  CHECK_FALSE(std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(&side_door.slot(0)))
                  .compare_exchange_strong(expected, 1));
}

TEST_CASE("a peer without an inbox is sent to by UDP until it has one") {
  Sender sender;
  auto& [prefix, a, b, from_a] = sender;
  auto bytes = packet(64, 1);
  size_t lost = 0;
  CHECK_FALSE(from_a.deliver(datagram_to(b, bytes), &lost));

  ShmInbox inbox_b;
  std::string message;
  REQUIRE(inbox_b.open(prefix, b, &message) == 0);
  // Looked up again after kLookupRetry, not on every packet.
  std::this_thread::sleep_for(ShmPeers::kLookupRetry + std::chrono::milliseconds(20));
  CHECK(from_a.deliver(datagram_to(b, bytes), &lost));
  InDatagram in[4];
  CHECK(inbox_b.receive(in) == 1);
}

TEST_CASE("an inbox closed by its owner is replaced by the next owner's, which senders find") {
  Sender sender;
  auto& [prefix, a, b, from_a] = sender;
  auto bytes = packet(64, 1);
  size_t lost = 0;
  std::string path;
  {
    ShmInbox first;
    std::string message;
    REQUIRE(first.open(prefix, b, &message) == 0);
    path = first.path();
    REQUIRE(from_a.deliver(datagram_to(b, bytes), &lost));
  }
  CHECK(::access(path.c_str(), F_OK) != 0);                   // removed at close
  CHECK_FALSE(from_a.deliver(datagram_to(b, bytes), &lost));  // gone: UDP

  ShmInbox second;
  std::string message;
  REQUIRE(second.open(prefix, b, &message) == 0);
  std::this_thread::sleep_for(ShmPeers::kLookupRetry + std::chrono::milliseconds(20));
  REQUIRE(from_a.deliver(datagram_to(b, bytes), &lost));
  InDatagram in[4];
  CHECK(second.receive(in) == 1);
}

TEST_CASE("an inbox left by an owner that died is marked closed and replaced by the next owner") {
  std::string prefix = test_prefix();
  sockaddr_storage a = ipv4("127.0.9.1");
  sockaddr_storage b = ipv4("127.0.9.2");
  // The dead owner's file, as a crash leaves it: still named, never marked closed.
  ShmMapping dead;
  std::string message;
  const std::string path = vroce::packet_io::shm_inbox_path(prefix, b);
  REQUIRE(dead.create(path, &message) == 0);
  ShmPeers from_a;
  from_a.open(prefix, a, "testA");
  auto bytes = packet(64, 1);
  size_t lost = 0;
  REQUIRE(from_a.deliver(datagram_to(b, bytes), &lost));  // into the dead one's ring

  ShmInbox next;
  REQUIRE(next.open(prefix, b, &message) == 0);
  CHECK(dead.closed());
  // The sender sees the closed mark on its next packet and maps the new file at once.
  REQUIRE(from_a.deliver(datagram_to(b, bytes), &lost));
  InDatagram in[4];
  CHECK(next.receive(in) == 1);
}

TEST_CASE("a file of another layout under an inbox's name is not written to") {
  std::string prefix = test_prefix();
  sockaddr_storage a = ipv4("127.0.9.1");
  sockaddr_storage b = ipv4("127.0.9.2");
  const std::string path = vroce::packet_io::shm_inbox_path(prefix, b);
  int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, 4096) == 0);
  ::close(fd);
  ShmPeers from_a;
  from_a.open(prefix, a, "testA");
  auto bytes = packet(64, 1);
  size_t lost = 0;
  CHECK_FALSE(from_a.deliver(datagram_to(b, bytes), &lost));
  ::unlink(path.c_str());
}

TEST_CASE("two threads writing into one inbox lose nothing and keep each one's order") {
  Wire wire;
  ShmPeers from_c;
  sockaddr_storage c = ipv4("127.0.9.3");
  from_c.open(wire.prefix, c, "testC");
  constexpr uint32_t kEach = 20000;
  std::atomic<bool> unrouted{false};  // Catch2's assertions are for the main thread only
  auto sender = [&](ShmPeers& peers) {
    for (uint32_t i = 0; i < kEach;) {
      std::vector<uint8_t> bytes(16);
      std::memcpy(bytes.data(), &i, sizeof(i));
      size_t lost = 0;
      if (!peers.deliver(datagram_to(wire.b, bytes), &lost)) {
        unrouted = true;
        return;
      }
      if (lost == 0) {
        ++i;  // a full ring: try again, as RC would retransmit
      } else {
        std::this_thread::yield();
      }
    }
  };
  std::thread ta(sender, std::ref(wire.from_a));
  std::thread tc(sender, std::ref(from_c));
  uint32_t next_a = 0;
  uint32_t next_c = 0;
  InDatagram in[64];
  while ((next_a < kEach || next_c < kEach) && !unrouted) {
    size_t n = wire.inbox_b.receive(in);
    for (size_t i = 0; i < n; ++i) {
      uint32_t value = 0;
      std::memcpy(&value, in[i].data, sizeof(value));
      const auto& src = reinterpret_cast<const sockaddr_in&>(*in[i].src);
      if (src.sin_addr.s_addr == reinterpret_cast<const sockaddr_in&>(wire.a).sin_addr.s_addr) {
        REQUIRE(value == next_a++);
      } else {
        REQUIRE(value == next_c++);
      }
    }
    if (n == 0) {
      std::this_thread::yield();
    }
  }
  ta.join();
  tc.join();
  CHECK_FALSE(unrouted);
}
