// The clear-to-send ring: slot arithmetic and the sender's readiness check over torn, stale and
// corrupt slots.
#include "core/datapath/cts_ring.h"

#include <array>
#include <catch2/catch.hpp>
#include <vector>

using roce::check_cts_slot;
using roce::CtsBuffer;
using roce::CtsEntry;
using roce::CtsSlotState;
using roce::kCtsRingSlots;
using roce::kCtsSlotBytes;
using roce::kMaxRecvs;

namespace {

std::array<CtsEntry, kMaxRecvs> filled_slot(int n, uint64_t seq) {
  std::array<CtsEntry, kMaxRecvs> slot{};
  std::vector<CtsBuffer> buffers;
  for (int i = 0; i < n; ++i) {
    buffers.push_back(CtsBuffer{0x1000u + static_cast<uint64_t>(i) * 0x100u,
                                static_cast<uint32_t>(64 * (i + 1)),
                                0xabc0u + static_cast<uint32_t>(i), 100 + i});
  }
  roce::fill_cts_slot(slot, buffers, seq, 7);
  return slot;
}

}  // namespace

TEST_CASE("consecutive sequences use consecutive slots and wrap at the ring size", "[cts]") {
  STATIC_REQUIRE(roce::cts_slot_of(1) == 1);
  STATIC_REQUIRE(roce::cts_slot_of(kCtsRingSlots - 1) == kCtsRingSlots - 1);
  STATIC_REQUIRE(roce::cts_slot_of(kCtsRingSlots) == 0);
  STATIC_REQUIRE(roce::cts_slot_of(kCtsRingSlots + 5) == 5);
  STATIC_REQUIRE(roce::cts_slot_offset(3) == 3 * kCtsSlotBytes);
  STATIC_REQUIRE(roce::kCtsRingBytes == kCtsRingSlots * kMaxRecvs * sizeof(CtsEntry));
  // 64-bit sequences do not alias within any realistic run.
  REQUIRE(roce::cts_slot_of(uint64_t{1} << 40) == 0);
}

TEST_CASE("a filled slot carries every buffer, the request, the count and the sequence", "[cts]") {
  auto slot = filled_slot(3, 42);
  for (int i = 0; i < 3; ++i) {
    const auto& e = slot[static_cast<size_t>(i)];
    CHECK(e.addr == 0x1000u + static_cast<uint64_t>(i) * 0x100u);
    CHECK(e.size == static_cast<uint32_t>(64 * (i + 1)));
    CHECK(e.rkey == 0xabc0u + static_cast<uint32_t>(i));
    CHECK(e.tag == 100 + i);
    CHECK(e.request == 7);
    CHECK(e.count == 3);
    CHECK(e.seq == 42);
  }
  CHECK(slot[3].seq == 0);
}

TEST_CASE("the sender sees a slot as ready only when all n entries carry the sequence", "[cts]") {
  int n = 0;
  SECTION("a zeroed ring is never ready") {
    std::array<CtsEntry, kMaxRecvs> slot{};
    CHECK(check_cts_slot(slot.data(), 1, &n) == CtsSlotState::NotReady);
  }
  SECTION("a complete slot is ready and reports its count") {
    auto slot = filled_slot(4, 9);
    REQUIRE(check_cts_slot(slot.data(), 9, &n) == CtsSlotState::Ready);
    CHECK(n == 4);
  }
  SECTION("a stale slot from the previous lap is not ready") {
    auto slot = filled_slot(1, 9);
    CHECK(check_cts_slot(slot.data(), 9 + kCtsRingSlots, &n) == CtsSlotState::NotReady);
  }
  SECTION("a torn write (a later entry still old) is not ready yet") {
    auto slot = filled_slot(4, 9);
    slot[3].seq = 9 - kCtsRingSlots;
    CHECK(check_cts_slot(slot.data(), 9, &n) == CtsSlotState::NotReady);
    slot[3].seq = 9;
    CHECK(check_cts_slot(slot.data(), 9, &n) == CtsSlotState::Ready);
  }
  SECTION("a count outside 1..maxRecvs is corruption, not a wait") {
    auto slot = filled_slot(1, 5);
    slot[0].count = 0;
    CHECK(check_cts_slot(slot.data(), 5, &n) == CtsSlotState::Corrupt);
    slot[0].count = kMaxRecvs + 1;
    CHECK(check_cts_slot(slot.data(), 5, &n) == CtsSlotState::Corrupt);
  }
}

TEST_CASE("a slot found begun is checked for the rest: its count and its later entries", "[cts]") {
  int n = 0;
  auto slot = filled_slot(3, 21);
  REQUIRE(roce::cts_slot_begun(slot.data(), 21));
  CHECK_FALSE(roce::cts_slot_begun(slot.data(), 22));
  SECTION("complete: ready, with its count") {
    REQUIRE(roce::check_begun_cts_slot(slot.data(), 21, &n) == CtsSlotState::Ready);
    CHECK(n == 3);
  }
  SECTION("entry 0 landed, a later one not yet") {
    slot[2].seq = 21 - kCtsRingSlots;
    CHECK(roce::check_begun_cts_slot(slot.data(), 21, &n) == CtsSlotState::NotReady);
  }
  SECTION("an impossible count is corruption") {
    slot[0].count = kMaxRecvs + 1;
    CHECK(roce::check_begun_cts_slot(slot.data(), 21, &n) == CtsSlotState::Corrupt);
  }
}

TEST_CASE("the copies of a ready slot's entries carry what the sender uses", "[cts]") {
  SECTION("an entry of a multi-receive: every field") {
    auto slot = filled_slot(3, 12);
    const CtsEntry e = roce::read_cts_entry(&slot[2]);
    CHECK(e.addr == 0x1200u);
    CHECK(e.size == 192u);
    CHECK(e.rkey == 0xabc2u);
    CHECK(e.tag == 102);
    CHECK(e.request == 7);
    CHECK(e.count == 3);
    CHECK(e.seq == 12);
  }
  SECTION("the entry of a single receive: its buffer and tag, and the count and sequence known") {
    auto slot = filled_slot(1, 13);
    const CtsEntry e = roce::read_single_cts_entry(slot.data(), 13);
    CHECK(e.addr == 0x1000u);
    CHECK(e.size == 64u);
    CHECK(e.rkey == 0xabc0u);
    CHECK(e.tag == 100);
    CHECK(e.count == 1);
    CHECK(e.seq == 13);
  }
}
