// Recovery-epoch frames: exact round trips of each kind, one refusal per field the decoder
// checks, and random bytes that never decode to something invalid.
#include "net/epoch_frames.h"

#include <catch2/catch.hpp>
#include <random>

#include "result_checks.h"

namespace {

using namespace roce::net;

constexpr uint64_t kNonce = 0x1122334455667788ULL;

EpochStart start_frame() {
  EpochStart f;
  f.nonce = kNonce;
  f.epoch = 3;
  f.next_seq = 1000;
  f.live_members = 0b10;
  f.ring_rkeys = {0x5eed};
  f.qps = {{1, 0x123, 0xabcde}, {1, 0x124, 0}};
  return f;
}

EpochReady ready_frame() {
  EpochReady f;
  f.nonce = kNonce;
  f.epoch = 3;
  f.low_seq = 990;
  f.next_seq = 1000;
  f.done = 0b0110110110;  // 991, 992, 994, 995, 997, 998 complete
  f.live_members = 0b10;
  f.qps = {{1, 0x555, 7}, {1, 0x556, 8}};
  std::array<uint8_t, kCtsEntryBytes> entry{};
  for (size_t i = 0; i < entry.size(); ++i) {
    entry[i] = static_cast<uint8_t>(i * 7);
  }
  f.cts_entries = {entry, entry};
  f.cts_entries[1][0] = 0xff;
  return f;
}

// The bytes after the 4-byte length, as the watcher hands them to the decoder.
std::vector<uint8_t> unframed(const EpochFrame& frame) {
  auto bytes = encode_epoch_frame(frame);
  REQUIRE(bytes);
  REQUIRE(bytes->size() > 4);
  uint32_t length = 0;
  for (size_t i = 0; i < 4; ++i) {
    length |= uint32_t{(*bytes)[i]} << (8 * i);
  }
  REQUIRE(length == bytes->size() - 4);
  return {bytes->begin() + 4, bytes->end()};
}

EpochDecodeResult round_trip(const EpochFrame& frame) {
  return decode_epoch_frame(unframed(frame), kNonce);
}

// The decoder's verdict on a frame that encode would refuse: encoded with a valid frame's bytes,
// then the field patched at `offset` (from the header's start) with `value` of `width` bytes.
std::string refusal_of(const EpochFrame& frame, size_t offset, uint64_t value, int width) {
  std::vector<uint8_t> bytes = unframed(frame);
  REQUIRE(offset + static_cast<size_t>(width) <= bytes.size());
  for (int i = 0; i < width; ++i) {
    bytes[offset + static_cast<size_t>(i)] = static_cast<uint8_t>(value >> (8 * i));
  }
  const EpochDecodeResult result = decode_epoch_frame(bytes, kNonce);
  CHECK_FALSE(result.ok());
  return result.error;
}

// Offsets from the header's start: header 12, nonce 8, epoch 4, then the kind's body.
constexpr size_t kEpochAt = 20;
constexpr size_t kBodyAt = 24;

}  // namespace

TEST_CASE("each epoch frame decodes to what was encoded", "[unit][epoch]") {
  EpochWanted wanted;
  wanted.nonce = kNonce;
  wanted.epoch = 0;
  wanted.down_members = 0b1;
  const EpochDecodeResult w = round_trip(wanted);
  REQUIRE(w.ok());
  CHECK(std::get<EpochWanted>(w.frame) == wanted);
  EpochWanted rejoin = wanted;  // a rejoin request: member 1 back, nothing down
  rejoin.down_members = 0;
  rejoin.back_members = 0b10;
  const EpochDecodeResult j = round_trip(rejoin);
  REQUIRE(j.ok());
  CHECK(std::get<EpochWanted>(j.frame) == rejoin);

  const EpochDecodeResult s = round_trip(start_frame());
  REQUIRE(s.ok());
  CHECK(std::get<EpochStart>(s.frame) == start_frame());

  const EpochDecodeResult r = round_trip(ready_frame());
  REQUIRE(r.ok());
  CHECK(std::get<EpochReady>(r.frame) == ready_frame());
  CHECK(kind_of(r.frame) == EpochKind::Ready);
  CHECK(std::string(epoch_kind_name(EpochKind::Ready)) == "EpochReady");

  EpochGo go;
  go.nonce = kNonce;
  go.epoch = 3;
  const EpochDecodeResult g = round_trip(go);
  REQUIRE(g.ok());
  CHECK(std::get<EpochGo>(g.frame) == go);
  CHECK(kind_of(g.frame) == EpochKind::Go);
  CHECK(unframed(go).size() == kBodyAt);  // nonce and epoch, nothing after
  go.epoch = 0;
  CHECK_FALSE(encode_epoch_frame(go));
  CHECK(refusal_of(EpochGo{kNonce, 3}, kEpochAt, 0, 4).find("epoch 0") != std::string::npos);
}

TEST_CASE("EpochReady says which sequences the receiver completed", "[unit][epoch]") {
  const EpochReady f = ready_frame();
  CHECK(f.complete(5));  // below the window: complete before the epoch
  CHECK(f.complete(989));
  CHECK_FALSE(f.complete(990));  // low_seq: the first incomplete
  CHECK(f.complete(991));
  CHECK(f.complete(992));
  CHECK_FALSE(f.complete(993));
  CHECK(f.complete(998));
  CHECK_FALSE(f.complete(999));
  CHECK_FALSE(f.complete(1000));  // not posted
  EpochReady all = f;
  all.low_seq = all.next_seq;
  all.done = 0;
  REQUIRE(round_trip(all).ok());
  CHECK(all.complete(999));
  CHECK_FALSE(all.complete(1000));
}

TEST_CASE("an epoch frame with a field out of range is refused, naming it", "[unit][epoch]") {
  CHECK_THAT(refusal_of(start_frame(), 0, 0x12345678, 4), Catch::Contains("magic"));
  CHECK_THAT(refusal_of(start_frame(), 4, 99, 2), Catch::Contains("handshake version 99"));
  CHECK_THAT(refusal_of(start_frame(), 6, 5, 2), Catch::Contains("kind 5"));
  CHECK_THAT(refusal_of(start_frame(), 8, 3, 4), Catch::Contains("body length 3"));
  CHECK_THAT(refusal_of(start_frame(), 12, 42, 8), Catch::Contains("nonce 0x2a"));
  CHECK_THAT(refusal_of(start_frame(), kEpochAt, 0, 4), Catch::Contains("epoch 0"));
  EpochWanted both;
  both.nonce = kNonce;
  both.down_members = 0b11;
  both.back_members = 0b10;
  CHECK_THAT(validate_epoch_frame(both), Catch::Contains("members 0x2 both down and back"));
  // EpochStart: next_seq u64, live members u8, a ring rkey u32 per live member (one here), QP
  // count u16, QPs (member u8, qpn u32, psn u32).
  static_cast<void>(refusal_of(start_frame(), kBodyAt + 8, 0, 1));  // refused, for some field
  EpochStart none_live = start_frame();
  none_live.live_members = 0;
  none_live.ring_rkeys.clear();
  CHECK_THAT(validate_epoch_frame(none_live), Catch::Contains("no live member"));
  CHECK_THAT(refusal_of(start_frame(), kBodyAt + 8, 0b01, 1), Catch::Contains("not live"));
  EpochStart keyless = start_frame();
  keyless.ring_rkeys.clear();
  CHECK_THAT(validate_epoch_frame(keyless), Catch::Contains("0 ring keys for 1 live members"));
  CHECK_THAT(refusal_of(start_frame(), kBodyAt + 15 + 1, 0, 4), Catch::Contains("QPN 0"));
  CHECK_THAT(refusal_of(start_frame(), kBodyAt + 15 + 5, 0x1000000, 4),
             Catch::Contains("PSN 16777216"));
  CHECK_THAT(refusal_of(start_frame(), kBodyAt + 13, 3, 2), Catch::Contains("truncated"));
  CHECK_THAT(refusal_of(start_frame(), kBodyAt + 13, 1, 2), Catch::Contains("after the body"));
  // EpochReady: low u64, next u64, done u64, live u8, QPs, entries.
  CHECK_THAT(refusal_of(ready_frame(), kBodyAt, 900, 8), Catch::Contains("window"));
  CHECK_THAT(refusal_of(ready_frame(), kBodyAt, 1001, 8), Catch::Contains("window"));
  CHECK_THAT(refusal_of(ready_frame(), kBodyAt + 16, 1U << 10, 8),
             Catch::Contains("at or past 1000"));
  CHECK_THAT(refusal_of(ready_frame(), kBodyAt + 16, 1, 8), Catch::Contains("first incomplete"));
  CHECK_THAT(refusal_of(ready_frame(), kBodyAt + 27 + 2 * 9, 300, 2), Catch::Contains("truncated"));
}

TEST_CASE("encode refuses a frame it would not accept", "[unit][epoch]") {
  EpochStart f = start_frame();
  f.qps.clear();
  const auto none = encode_epoch_frame(f);
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error(), Catch::Contains("EpochStart not sent") && Catch::Contains("QP count 0"));
  EpochReady r = ready_frame();
  r.cts_entries.resize(kMaxEpochCtsEntries + 1);
  CHECK_FALSE(encode_epoch_frame(r));
  // The largest frame the plugin can send fits the bound.
  EpochReady big = ready_frame();
  big.qps.assign(kMaxQpsPerConnection, EpochQp{1, 1, 1});
  big.cts_entries.resize(kMaxEpochCtsEntries);
  const auto encoded = encode_epoch_frame(big);
  REQUIRE(encoded);
  CHECK(encoded->size() - 4 <= kMaxEpochFrameBytes);
  CHECK(decode_epoch_frame(unframed(big), kNonce).ok());
}

TEST_CASE("random bytes after a valid header never decode to an invalid frame", "[unit][epoch]") {
  std::mt19937_64 random(7);
  const std::vector<uint8_t> valid = unframed(ready_frame());
  int accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> bytes = valid;
    const size_t flips = 1 + random() % 4;
    for (size_t i = 0; i < flips; ++i) {
      bytes[kBodyAt + random() % (bytes.size() - kBodyAt)] = static_cast<uint8_t>(random());
    }
    const EpochDecodeResult result = decode_epoch_frame(bytes, kNonce);
    if (result.ok()) {
      ++accepted;
      CHECK(validate_epoch_frame(result.frame).empty());
    } else {
      CHECK_FALSE(result.error.empty());
    }
  }
  CHECK(accepted > 0);  // flips in the entries' opaque bytes are valid frames
}
