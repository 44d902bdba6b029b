// Segmentation tables: how messages split at each path MTU, and the PSNs they use.
#include "wire/segment.h"

#include <catch2/catch.hpp>

using namespace vroce::wire;

TEST_CASE("segment: table of message lengths at PMTU 1024", "[wire][segment]") {
  struct Row {
    std::uint64_t length;
    std::uint32_t packets;
    std::uint32_t last_payload;
  };
  const Row rows[] = {
      {0, 1, 0},       {1, 1, 1},    {1023, 1, 1023},   {1024, 1, 1024},        {1025, 2, 1},
      {2048, 2, 1024}, {2049, 3, 1}, {65536, 64, 1024}, {1u << 20, 1024, 1024},
  };
  for (const Row& r : rows) {
    INFO("length " << r.length);
    const SegmentPlan p = plan_segments(r.length, 1024);
    REQUIRE(p.packets == r.packets);
    CHECK(p.payload(p.packets - 1) == r.last_payload);
    CHECK(psns_for_message(r.length, 1024) == r.packets);
    std::uint64_t total = 0;
    for (std::uint32_t i = 0; i < p.packets; ++i) {
      CHECK(p.offset(i) == total);
      total += p.payload(i);
      if (p.packets == 1) {
        CHECK(p.segment(i) == Segment::Only);
      } else if (i == 0) {
        CHECK(p.segment(i) == Segment::First);
        CHECK(p.payload(i) == 1024);
      } else if (i + 1 == p.packets) {
        CHECK(p.segment(i) == Segment::Last);
        CHECK(p.payload(i) >= 1);
      } else {
        CHECK(p.segment(i) == Segment::Middle);
        CHECK(p.payload(i) == 1024);
      }
    }
    CHECK(total == r.length);
    CHECK(p.segment(p.packets) == Segment::None);
    CHECK(p.payload(p.packets) == 0);
  }
}

TEST_CASE("segment: every path MTU, the largest message, and invalid arguments",
          "[wire][segment]") {
  for (std::uint32_t pmtu : {256u, 512u, 1024u, 2048u, 4096u}) {
    CHECK(plan_segments(pmtu, pmtu).packets == 1);
    CHECK(plan_segments(pmtu + 1, pmtu).packets == 2);
    CHECK(plan_segments(kMaxMessageLength, pmtu).packets == kMaxMessageLength / pmtu);
  }
  // A READ of 0 bytes still reserves one PSN; 2^31 bytes at 256 reserve 2^23 PSNs, exactly the
  // PSN window.
  CHECK(psns_for_message(0, 4096) == 1);
  CHECK(psns_for_message(kMaxMessageLength, 256) == (1u << 23));
  CHECK(plan_segments(100, 1000).packets == 0);
  CHECK(plan_segments(100, 0).packets == 0);
  CHECK(plan_segments(kMaxMessageLength + 1, 4096).packets == 0);
  CHECK(psns_for_message(1, 100) == 0);
}
