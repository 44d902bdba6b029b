// Handshake messages: exact round trips, one test per rejection reason, random-byte robustness,
// and a full request/reply/ready exchange over loopback in which a stray connection carrying
// the wrong nonce is refused while the listener keeps serving.
#include "net/handshake.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <random>

#include "hang_bound.h"
#include "net/socket.h"
#include "result_checks.h"

namespace {

using namespace roce::net;

constexpr uint64_t kNonce = 0x1122334455667788ULL;

EndpointInfo endpoint(uint8_t qps) {
  EndpointInfo info;
  info.plugin_version = plugin_version_code();
  info.device_name = "vroce0";
  info.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 7, 1};
  info.gid_index = 3;
  info.mtu = 3;
  info.traffic_class = 106;
  info.service_level = 3;
  for (uint8_t i = 0; i < qps; ++i) {
    info.qps.push_back({0x100u + i, 0xabcdeu + i});
  }
  return info;
}

ConnectRequest request() {
  ConnectRequest message;
  message.nonce = kNonce;
  message.endpoint = endpoint(4);
  message.cts_ring = {0x7f0000001000ULL, 0x1234, 256, 64};
  message.max_recvs = 8;
  return message;
}

ConnectReply reply() {
  ConnectReply message;
  message.nonce = kNonce;
  message.endpoint = endpoint(4);
  message.endpoint.device_name = "vroce1";
  message.endpoint.qps[0].qpn = 0xffffff;
  message.sizes_area = {0x7f0000002000ULL, 0x99, 256, 32};
  return message;
}

std::vector<uint8_t> encode(const HandshakeMessage& message) {
  return roce::test::value_of(encode_message(message));
}

HandshakeMessage round_trip(const HandshakeMessage& message) {
  const std::vector<uint8_t> bytes = encode(message);
  const DecodeResult result = decode_message(bytes, DecodeExpectations{kNonce});
  INFO(result.detail);
  REQUIRE(result.ok());
  REQUIRE(result.message.has_value());
  return *result.message;
}

// Decodes `message` after `mutate` changed its encoded form; returns the refusal.
template <typename Mutate>
DecodeResult decode_mutated(const HandshakeMessage& message, Mutate mutate,
                            DecodeExpectations expect = {}) {
  std::vector<uint8_t> bytes = encode(message);
  mutate(bytes);
  return decode_message(bytes, expect);
}

// For values the wire cannot easily be patched into: the refusal validate_message() gives,
// after checking that encode_message() refuses to send the message for the same reason.
DecodeResult refusal_of(HandshakeMessage message, DecodeExpectations expect = {}) {
  std::string detail;
  const RejectReason expected = validate_message(message, expect, &detail);
  REQUIRE(expected != RejectReason::None);
  CHECK_THAT(roce::test::failure_of(encode_message(message)), Catch::Contains(detail));
  DecodeResult result;
  result.reason = expected;
  result.detail = detail;
  return result;
}

bool flush_until_done_for_test(FramedChannel& channel) {
  for (int i = 0; i < 200000; ++i) {
    const IoStatus status = channel.flush();
    if (status != IoStatus::InProgress) {
      return status == IoStatus::Done;
    }
  }
  return false;
}

void set_u32(std::vector<uint8_t>& bytes, size_t offset, uint32_t value) {
  for (size_t i = 0; i < 4; ++i) {
    bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
  }
}

// Offsets inside an encoded ConnectRequest built by request() (device name "vroce0").
constexpr size_t kBody = kHandshakeHeaderSize;
constexpr size_t kEndpoint = kBody + 8;
constexpr size_t kNameLength = kEndpoint + 4;
constexpr size_t kName = kNameLength + 1;
constexpr size_t kGid = kName + 6;
constexpr size_t kMtu = kGid + 16 + 1;
constexpr size_t kTrafficClass = kMtu + 1;
constexpr size_t kServiceLevel = kTrafficClass + 2;
constexpr size_t kQpCount = kServiceLevel + 1;
constexpr size_t kFirstQpn = kQpCount + 1;

}  // namespace

TEST_CASE("every message kind survives encode and decode unchanged", "[handshake]") {
  CHECK(std::get<ConnectRequest>(round_trip(request())) == request());
  CHECK(std::get<ConnectReply>(round_trip(reply())) == reply());
  CHECK(std::get<Ready>(round_trip(Ready{kNonce})).nonce == kNonce);
  const Reject reject{static_cast<uint16_t>(RejectReason::TrafficClassMismatch),
                      "traffic class 104 here, 96 on the peer"};
  CHECK(std::get<Reject>(round_trip(reject)) == reject);
  CHECK(std::get<Reject>(round_trip(Reject{0, ""})).text.empty());
}

TEST_CASE("a request carries 1 to 16 QPs, each QPN and PSN at the 24-bit limits", "[handshake]") {
  for (const uint8_t count : {uint8_t{1}, uint8_t{16}}) {
    ConnectRequest message = request();
    message.endpoint = endpoint(count);
    message.endpoint.qps.back() = {kMaxQpn, kMaxPsn};
    CHECK(std::get<ConnectRequest>(round_trip(message)) == message);
  }
}

TEST_CASE("the header is little-endian: magic, version, kind, body length", "[handshake]") {
  const std::vector<uint8_t> bytes = encode(Ready{kNonce});
  REQUIRE(bytes.size() == kHandshakeHeaderSize + 8);
  CHECK(bytes[0] == 0x52);
  CHECK(bytes[3] == 0x53);
  CHECK(bytes[4] == kHandshakeVersion);
  CHECK(bytes[6] == static_cast<uint8_t>(MessageKind::Ready));
  CHECK(bytes[8] == 8);
  CHECK(bytes[12] == 0x88);
  CHECK(bytes[19] == 0x11);
}

TEST_CASE("a wrong magic is refused", "[handshake]") {
  const DecodeResult result = decode_mutated(request(), [](auto& b) { b[0] = 'G'; });
  CHECK(result.reason == RejectReason::BadMagic);
  CHECK_THAT(result.detail, Catch::Contains("not this plugin's handshake"));
  CHECK_FALSE(result.message.has_value());
}

TEST_CASE("the request carries the sender's split mode, 0 or 1", "[handshake]") {
  for (const uint8_t split : {uint8_t{0}, uint8_t{1}}) {
    ConnectRequest message = request();
    message.split_data = split;
    const auto bytes = encode_message(message);
    REQUIRE(bytes.has_value());
    DecodeExpectations expect;
    expect.nonce = message.nonce;
    const DecodeResult decoded = decode_message(*bytes, expect);
    REQUIRE(decoded.ok());
    CHECK(std::get<ConnectRequest>(*decoded.message).split_data == split);
  }
  ConnectRequest bad = request();
  bad.split_data = 2;
  CHECK(refusal_of(bad).reason == RejectReason::BadSplitMode);
}

TEST_CASE("a Reject carries the listen nonce or 0, never another", "[handshake]") {
  Reject refusal{static_cast<uint16_t>(RejectReason::TrafficClassMismatch), "tc 104 vs 96", kNonce};
  CHECK(std::get<Reject>(round_trip(refusal)).nonce == kNonce);
  DecodeExpectations expect;
  expect.nonce = kNonce;
  CHECK(decode_message(encode(refusal), expect).ok());
  refusal.nonce = 0;  // an unauthenticated refusal is still a refusal, with nothing to act on
  CHECK(decode_message(encode(refusal), expect).ok());
  refusal.nonce = kNonce + 1;
  CHECK(decode_message(encode(refusal), expect).reason == RejectReason::WrongNonce);
}

TEST_CASE("the request and the reply carry ECE, all zero when unsupported", "[handshake]") {
  ConnectRequest message = request();
  message.ece = {1, 0x15b3, 0x30000002, 0};
  CHECK(std::get<ConnectRequest>(round_trip(message)).ece == message.ece);
  ConnectReply answer = reply();
  answer.ece = {1, 0x15b3, 0x10000002, 0};
  CHECK(std::get<ConnectReply>(round_trip(answer)).ece == answer.ece);
  answer.ece = {};
  CHECK(std::get<ConnectReply>(round_trip(answer)).ece == Ece{});

  message.ece = {2, 0x15b3, 1, 0};
  CHECK(refusal_of(message).reason == RejectReason::BadEce);
  message.ece = {0, 0x15b3, 0, 0};
  const DecodeResult result = refusal_of(message);
  CHECK(result.reason == RejectReason::BadEce);
  CHECK_THAT(result.detail, Catch::Contains("unsupported carries vendor id 0x15b3"));
}

TEST_CASE("another protocol version is refused naming both versions", "[handshake]") {
  // Version 1 had no split mode in the request (before NCCL_IB_SPLIT_DATA_ON_QPS), version 2 no
  // ECE (before NCCL_IB_ECE_ENABLE), version 3 no virtual NIC members (issue 48).
  for (const uint8_t older : {uint8_t{1}, uint8_t{2}, uint8_t{3}}) {
    const DecodeResult result = decode_mutated(request(), [&](auto& b) { b[4] = older; });
    CHECK(result.reason == RejectReason::UnsupportedVersion);
    CHECK_THAT(result.detail,
               Catch::Contains("peer speaks handshake version " + std::to_string(older)) &&
                   Catch::Contains("speaks version 4") &&
                   Catch::Contains("nccl-net-roce " ROCE_VERSION));
  }
}

TEST_CASE("a virtual NIC's members travel in the request and the reply", "[handshake]") {
  ConnectRequest two = request();  // 4 QPs: 2 per member
  two.endpoint.member_count = 2;
  two.endpoint.more_members.push_back(
      {{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}, 1, 5});
  CHECK(std::get<ConnectRequest>(round_trip(two)) == two);
  ConnectReply reply_two = reply();
  reply_two.endpoint.member_count = 2;
  reply_two.endpoint.more_members.push_back(
      {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 3, 4});
  reply_two.more_sizes_rkeys = {0x4242};
  CHECK(std::get<ConnectReply>(round_trip(reply_two)) == reply_two);

  // The QPs must split evenly over the members.
  ConnectRequest three = two;
  three.endpoint.member_count = 3;
  three.endpoint.more_members.push_back(two.endpoint.more_members[0]);
  DecodeResult result = refusal_of(three);
  CHECK(result.reason == RejectReason::BadMembers);
  CHECK_THAT(result.detail, Catch::Contains("member count 3") && Catch::Contains("4 QPs"));
  // A member count that disagrees with the members listed, or above 8.
  ConnectRequest missing = two;
  missing.endpoint.more_members.clear();
  CHECK(refusal_of(missing).reason == RejectReason::BadMembers);
  ConnectRequest zero = request();
  zero.endpoint.member_count = 0;
  CHECK(refusal_of(zero).reason == RejectReason::BadMembers);
  // A member without a usable GID or MTU.
  ConnectRequest no_gid = two;
  no_gid.endpoint.more_members[0].gid = {};
  result = refusal_of(no_gid);
  CHECK(result.reason == RejectReason::ZeroGid);
  CHECK_THAT(result.detail, Catch::Contains("member 1"));
  ConnectRequest bad_mtu = two;
  bad_mtu.endpoint.more_members[0].mtu = 9;
  CHECK(refusal_of(bad_mtu).reason == RejectReason::BadMtu);
  // The reply carries one sizes-area key per member after the first.
  ConnectReply keys = reply_two;
  keys.more_sizes_rkeys.clear();
  result = refusal_of(keys);
  CHECK(result.reason == RejectReason::BadMembers);
  CHECK_THAT(result.detail, Catch::Contains("sizes-area keys"));
  // A lying member count cannot make the decoder read past the message.
  const DecodeResult truncated = decode_mutated(two, [](auto& b) { b.resize(b.size() - 10); });
  CHECK_FALSE(truncated.ok());
  CHECK(reject_reason_name(static_cast<uint16_t>(RejectReason::MemberCountMismatch)) ==
        "virtual NIC member count mismatch");
}

TEST_CASE("an unknown message kind is refused", "[handshake]") {
  for (const uint8_t kind : {uint8_t{0}, uint8_t{5}, uint8_t{200}}) {
    const DecodeResult result = decode_mutated(Ready{kNonce}, [&](auto& b) { b[6] = kind; });
    CHECK(result.reason == RejectReason::UnknownKind);
    CHECK_THAT(result.detail, Catch::Contains("kind " + std::to_string(kind)));
  }
}

TEST_CASE("a body length that disagrees with the bytes is a length mismatch", "[handshake]") {
  DecodeResult result = decode_mutated(request(), [](auto& b) { b.push_back(0); });
  CHECK(result.reason == RejectReason::LengthMismatch);
  CHECK_THAT(result.detail, Catch::Contains("bytes follow it"));
  result = decode_mutated(request(), [](auto& b) { b.pop_back(); });
  CHECK(result.reason == RejectReason::LengthMismatch);
  // Header and bytes agree, but the fields end before the body does.
  result = decode_mutated(Ready{kNonce}, [](auto& b) {
    b.push_back(0);
    set_u32(b, 8, 9);
  });
  CHECK(result.reason == RejectReason::LengthMismatch);
  CHECK_THAT(result.detail, Catch::Contains("1 bytes after its last field"));
}

TEST_CASE("a message that ends inside a field is truncated", "[handshake]") {
  const std::vector<uint8_t> full = encode(request());
  for (size_t size = 0; size < full.size(); ++size) {
    std::vector<uint8_t> bytes(full.begin(), full.begin() + static_cast<ptrdiff_t>(size));
    if (bytes.size() >= kHandshakeHeaderSize) {
      set_u32(bytes, 8, static_cast<uint32_t>(size - kHandshakeHeaderSize));
    }
    const DecodeResult result = decode_message(bytes);
    INFO(size);
    CHECK(result.reason == RejectReason::Truncated);
  }
  // A QP count larger than the bytes left must not allocate or read past the end.
  const DecodeResult result = decode_mutated(request(), [](auto& b) { b[kQpCount] = 200; });
  CHECK(result.reason == RejectReason::Truncated);
}

TEST_CASE("QP counts outside 1..128 are refused", "[handshake]") {
  ConnectRequest message = request();
  message.endpoint.qps.clear();
  CHECK(refusal_of(message).reason == RejectReason::BadQpCount);
  message.endpoint = endpoint(129);
  const DecodeResult result = refusal_of(message);
  CHECK(result.reason == RejectReason::BadQpCount);
  CHECK_THAT(result.detail, Catch::Contains("QP count 129 is outside 1..128"));
  // Also from the wire: a count of 0 with the bytes to match.
  ConnectRequest one = request();
  one.endpoint = endpoint(1);
  const DecodeResult wire = decode_mutated(one, [](auto& b) {
    b[kQpCount] = 0;
    b.erase(b.begin() + kFirstQpn, b.begin() + kFirstQpn + 8);
    set_u32(b, 8, static_cast<uint32_t>(b.size() - kHandshakeHeaderSize));
  });
  CHECK(wire.reason == RejectReason::BadQpCount);
}

TEST_CASE("a QPN of 0 or wider than 24 bits is refused", "[handshake]") {
  DecodeResult result = decode_mutated(request(), [](auto& b) { set_u32(b, kFirstQpn, 0); });
  CHECK(result.reason == RejectReason::BadQpn);
  CHECK_THAT(result.detail, Catch::Contains("QP 0 has QPN 0x0"));
  result = decode_mutated(request(), [](auto& b) { set_u32(b, kFirstQpn + 8, 0x1000000); });
  CHECK(result.reason == RejectReason::BadQpn);
  CHECK_THAT(result.detail, Catch::Contains("QP 1 has QPN 0x1000000"));
}

TEST_CASE("a PSN wider than 24 bits is refused", "[handshake]") {
  const DecodeResult result =
      decode_mutated(request(), [](auto& b) { set_u32(b, kFirstQpn + 4, 0x1000000); });
  CHECK(result.reason == RejectReason::BadPsn);
  CHECK_THAT(result.detail, Catch::Contains("starting PSN 0x1000000"));
}

TEST_CASE("an MTU that is not an ibv_mtu is refused", "[handshake]") {
  for (const uint8_t mtu : {uint8_t{0}, uint8_t{6}, uint8_t{255}}) {
    const DecodeResult result = decode_mutated(request(), [&](auto& b) { b[kMtu] = mtu; });
    CHECK(result.reason == RejectReason::BadMtu);
    CHECK_THAT(result.detail, Catch::Contains("MTU code " + std::to_string(mtu)));
  }
  CHECK(mtu_bytes(1) == 256);
  CHECK(mtu_bytes(5) == 4096);
  CHECK(mtu_bytes(6) == 0);
}

TEST_CASE("an all-zero GID is refused", "[handshake]") {
  const DecodeResult result = decode_mutated(reply(), [](auto& b) {
    for (size_t i = 0; i < 16; ++i) {
      b[kGid + i] = 0;
    }
  });
  CHECK(result.reason == RejectReason::ZeroGid);
  CHECK_THAT(result.detail, Catch::Contains("GID (index 3) is all zero"));
}

TEST_CASE("traffic class above 255 and service level above 15 are refused", "[handshake]") {
  DecodeResult result = decode_mutated(request(), [](auto& b) { b[kTrafficClass + 1] = 1; });
  CHECK(result.reason == RejectReason::BadTrafficClass);
  CHECK_THAT(result.detail, Catch::Contains("traffic class 362"));
  result = decode_mutated(request(), [](auto& b) { b[kServiceLevel] = 16; });
  CHECK(result.reason == RejectReason::BadServiceLevel);
  CHECK_THAT(result.detail, Catch::Contains("service level 16"));
}

TEST_CASE("a request, reply or ready with another listener's nonce is refused", "[handshake]") {
  const DecodeExpectations other{0x42};
  for (const HandshakeMessage& message :
       {HandshakeMessage(request()), HandshakeMessage(reply()), HandshakeMessage(Ready{kNonce})}) {
    const DecodeResult result = decode_message(encode(message), other);
    CHECK(result.reason == RejectReason::WrongNonce);
    CHECK_THAT(result.detail, Catch::Contains("nonce 0x1122334455667788 does not match 0x42"));
  }
  // Without an expectation the nonce is not checked (the sender learns it from the handle).
  CHECK(decode_message(encode(request())).ok());
}

TEST_CASE("invalid ring slot counts and sizes, and null ring addresses, are refused",
          "[handshake]") {
  const auto with_ring = [](RemoteRing ring) {
    ConnectRequest message = request();
    message.cts_ring = ring;
    return HandshakeMessage(message);
  };
  CHECK(refusal_of(with_ring({0x1000, 1, 0, 64})).reason == RejectReason::BadSlots);
  CHECK(refusal_of(with_ring({0x1000, 1, 255, 64})).reason == RejectReason::BadSlots);
  CHECK(refusal_of(with_ring({0x1000, 1, 131072, 64})).reason == RejectReason::BadSlots);
  CHECK(refusal_of(with_ring({0x1000, 1, 256, 0})).reason == RejectReason::BadSlots);
  CHECK(refusal_of(with_ring({0x1000, 1, 256, 12})).reason == RejectReason::BadSlots);
  CHECK(refusal_of(with_ring({0x1000, 1, 65536, 65536})).reason == RejectReason::BadSlots);
  const DecodeResult null_ring = refusal_of(with_ring({0, 1, 256, 64}));
  CHECK(null_ring.reason == RejectReason::BadAddress);
  CHECK_THAT(null_ring.detail, Catch::Contains("clear-to-send ring address is 0"));
  ConnectReply bad_reply = reply();
  bad_reply.sizes_area.slot_count = 3;
  const DecodeResult sizes = refusal_of(bad_reply);
  CHECK(sizes.reason == RejectReason::BadSlots);
  CHECK_THAT(sizes.detail, Catch::Contains("sizes area has 3 slots"));
}

TEST_CASE("maxRecvs outside 1..8 is refused", "[handshake]") {
  ConnectRequest message = request();
  message.max_recvs = 0;
  CHECK(refusal_of(message).reason == RejectReason::BadMaxRecvs);
  message.max_recvs = 9;
  CHECK_THAT(refusal_of(message).detail, Catch::Contains("maxRecvs 9 is outside 1..8"));
}

TEST_CASE("a device name that is empty, too long or not printable is refused", "[handshake]") {
  DecodeResult result = decode_mutated(request(), [](auto& b) { b[kName + 2] = '\n'; });
  CHECK(result.reason == RejectReason::BadDeviceName);
  CHECK_THAT(result.detail, Catch::Contains("'vr\\x0ace0'"));
  result = decode_mutated(request(), [](auto& b) { b[kName] = static_cast<uint8_t>(0xc3); });
  CHECK(result.reason == RejectReason::BadDeviceName);
  ConnectRequest message = request();
  message.endpoint.device_name = "";
  CHECK(refusal_of(message).reason == RejectReason::BadDeviceName);
  message.endpoint.device_name = std::string(65, 'a');
  CHECK(refusal_of(message).reason == RejectReason::BadDeviceName);
}

TEST_CASE("a reject text that is too long or not printable is refused", "[handshake]") {
  CHECK(refusal_of(Reject{1, std::string(513, 'x')}).reason == RejectReason::BadRejectText);
  CHECK(refusal_of(Reject{1, "bad\x1b[31m"}).reason == RejectReason::BadRejectText);
}

TEST_CASE("reject reasons have names, and unknown codes from newer peers print as numbers",
          "[handshake]") {
  CHECK(reject_reason_name(RejectReason::WrongNonce) == std::string("wrong nonce"));
  CHECK(reject_reason_name(static_cast<uint16_t>(RejectReason::TrafficClassMismatch)) ==
        "traffic class mismatch");
  CHECK(reject_reason_name(uint16_t{999}) == "reason 999");
  const Reject future{999, "something new"};
  CHECK(std::get<Reject>(round_trip(future)).reason == 999);
  CHECK(plugin_version_text(plugin_version_code()) == ROCE_VERSION);
}

TEST_CASE("random bytes never crash the decoder and always give a clean refusal",
          "[handshake][robustness]") {
  std::mt19937_64 random(20240607);
  const std::vector<std::vector<uint8_t>> seeds = {
      encode(request()), encode(reply()), encode(Ready{kNonce}), encode(Reject{4, "length"})};
  size_t accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> bytes;
    if (i % 2 == 0) {
      bytes.resize(random() % 300);
      for (uint8_t& b : bytes) {
        b = static_cast<uint8_t>(random());
      }
    } else {
      // Mutations of valid messages reach deep into the body parsers.
      bytes = seeds[random() % seeds.size()];
      const int flips = 1 + static_cast<int>(random() % 4);
      for (int f = 0; f < flips; ++f) {
        bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
      }
      if (random() % 8 == 0) {
        bytes.resize(random() % (bytes.size() + 1));
      }
    }
    const DecodeResult result = decode_message(bytes, DecodeExpectations{kNonce});
    if (result.ok()) {
      REQUIRE(result.message.has_value());
      // Whatever was accepted re-encodes to the very same bytes.
      const auto again = encode_message(*result.message);
      REQUIRE(again.has_value());
      CHECK(*again == bytes);
      ++accepted;
    } else {
      CHECK_FALSE(result.message.has_value());
      CHECK_FALSE(result.detail.empty());
    }
  }
  // Some byte flips land on fields where any value is valid (rkeys, PSNs): those decode.
  CHECK(accepted > 0);
}

TEST_CASE("a full handshake over loopback: a stray connection is refused, the real one completes",
          "[handshake][socket]") {
  const auto bind_address = SocketAddress::parse("127.0.7.20:0");
  REQUIRE(bind_address.has_value());
  std::optional<Listener> listener = roce::test::value_of(Listener::open(*bind_address));
  const auto deadline = Clock::now() + roce::test::kHangBound;

  // Two connections: first a stray one carrying the wrong nonce, then the real sender.
  struct Peer {
    std::optional<Connector> connector;
    std::optional<FramedChannel> channel;
  };
  Peer stray;
  Peer sender;
  stray.connector = roce::test::value_of(Connector::start(listener->address(), deadline));
  sender.connector = roce::test::value_of(Connector::start(listener->address(), deadline));
  REQUIRE(stray.connector.has_value());
  REQUIRE(sender.connector.has_value());

  ConnectRequest stray_request = request();
  stray_request.nonce = 0xdead;
  std::vector<std::optional<FramedChannel>> accepted;
  bool stray_rejected = false;
  bool sender_ready_sent = false;
  bool receiver_ready = false;
  bool sender_got_reply = false;
  for (int poll = 0; poll < 200000 && !(receiver_ready && stray_rejected); ++poll) {
    // Senders: connect, send the request, wait for the reply, send Ready.
    for (Peer* peer : {&stray, &sender}) {
      if (peer == &stray && stray_rejected) {
        continue;  // the listener closed it after the Reject
      }
      if (!peer->channel) {
        Socket socket;
        SocketError socket_error;
        const IoStatus status = peer->connector->progress(&socket, &socket_error);
        INFO(socket_error.message);
        REQUIRE(status != IoStatus::Error);
        if (status == IoStatus::Done) {
          peer->channel.emplace(std::move(socket), deadline);
          const HandshakeMessage first =
              peer == &stray ? HandshakeMessage(stray_request) : HandshakeMessage(request());
          REQUIRE(peer->channel->queue(encode(first)));
        }
        continue;
      }
      REQUIRE(peer->channel->flush() != IoStatus::Error);
      std::vector<uint8_t> bytes;
      const IoStatus status = peer->channel->receive(&bytes);
      if (peer == &stray) {
        if (status == IoStatus::Done) {
          const DecodeResult result = decode_message(bytes);
          REQUIRE(result.ok());
          const auto& reject = std::get<Reject>(*result.message);
          CHECK(reject.reason == static_cast<uint16_t>(RejectReason::WrongNonce));
          CHECK_THAT(reject.text, Catch::Contains("does not match"));
          stray_rejected = true;
        }
        continue;
      }
      REQUIRE(status != IoStatus::Error);
      if (status == IoStatus::Done && !sender_got_reply) {
        const DecodeResult result = decode_message(bytes, DecodeExpectations{kNonce});
        INFO(result.detail);
        REQUIRE(result.ok());
        CHECK(std::get<ConnectReply>(*result.message) == reply());
        sender_got_reply = true;
        REQUIRE(peer->channel->queue(encode(Ready{kNonce})));
        sender_ready_sent = true;
      }
    }
    // Listener side: accept everything, answer each request according to its nonce.
    Socket socket;
    SocketError socket_error;
    if (listener->accept(&socket, &socket_error) == IoStatus::Done) {
      accepted.emplace_back(std::in_place, std::move(socket), deadline);
    }
    for (std::optional<FramedChannel>& channel : accepted) {
      if (!channel) {
        continue;
      }
      if (channel->flush() == IoStatus::Error) {
        channel.reset();
        continue;
      }
      std::vector<uint8_t> bytes;
      if (channel->receive(&bytes) != IoStatus::Done) {
        continue;
      }
      const DecodeResult result = decode_message(bytes, DecodeExpectations{kNonce});
      if (!result.ok()) {
        REQUIRE(
            channel->queue(encode(Reject{static_cast<uint16_t>(result.reason), result.detail})));
        REQUIRE(flush_until_done_for_test(*channel));
        channel.reset();  // the listener goes on listening; only this connection is dropped
        continue;
      }
      if (std::holds_alternative<ConnectRequest>(*result.message)) {
        REQUIRE(channel->queue(encode(reply())));
      } else if (std::holds_alternative<Ready>(*result.message)) {
        receiver_ready = true;
      }
    }
  }
  CHECK(stray_rejected);
  CHECK(sender_ready_sent);
  CHECK(receiver_ready);
}
