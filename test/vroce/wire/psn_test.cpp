// 24-bit PSN arithmetic around the wrap and at the edges of the 2^23 window.
#include "wire/psn.h"

#include <catch2/catch.hpp>

using namespace vroce::wire;

TEST_CASE("psn: add and distance wrap modulo 2^24", "[wire][psn]") {
  STATIC_REQUIRE(psn_add(0xFFFFFF, 1) == 0);
  STATIC_REQUIRE(psn_add(0xFFFFFE, 5) == 3);
  STATIC_REQUIRE(psn_add(2, -3) == 0xFFFFFF);
  STATIC_REQUIRE(psn_add(0, std::int64_t{1} << 24) == 0);
  STATIC_REQUIRE(psn_distance(0xFFFFFE, 2) == 4);
  STATIC_REQUIRE(psn_distance(2, 0xFFFFFE) == 0xFFFFFC);
  STATIC_REQUIRE(psn_distance(7, 7) == 0);
  STATIC_REQUIRE(psn_mask(0x1234567) == 0x234567);
}

TEST_CASE("psn: before/after within the 2^23 window", "[wire][psn]") {
  STATIC_REQUIRE(psn_before(0xFFFFFF, 0));
  STATIC_REQUIRE(psn_after(0, 0xFFFFFF));
  STATIC_REQUIRE(psn_diff(0, 0xFFFFFF) == 1);
  STATIC_REQUIRE(psn_diff(0xFFFFFF, 0) == -1);
  STATIC_REQUIRE(!psn_before(5, 5) && !psn_after(5, 5) && psn_at_or_after(5, 5));
  // Edge of the window: 2^23 - 1 ahead is after; 2^23 ahead counts as before (the window is
  // [-2^23, 2^23)).
  STATIC_REQUIRE(psn_diff(0x7FFFFF, 0) == 0x7FFFFF);
  STATIC_REQUIRE(psn_after(0x7FFFFF, 0));
  STATIC_REQUIRE(psn_diff(0x800000, 0) == -0x800000);
  STATIC_REQUIRE(psn_before(0x800000, 0));
  // Antisymmetry everywhere but the half-way point.
  for (std::uint32_t a : {0u, 1u, 0x7FFFFEu, 0x800001u, 0xFFFFFFu}) {
    for (std::uint32_t b : {0u, 3u, 0x400000u, 0xFFFFF0u}) {
      if (psn_distance(a, b) == 0x800000) {
        continue;
      }
      CHECK(psn_before(a, b) == psn_after(b, a));
      CHECK(psn_diff(a, b) == -psn_diff(b, a));
    }
  }
}

TEST_CASE("psn: ranges and the responder's classification across the wrap", "[wire][psn]") {
  STATIC_REQUIRE(psn_in_range(0xFFFFFF, 0xFFFFFE, 4));
  STATIC_REQUIRE(psn_in_range(1, 0xFFFFFE, 4));
  STATIC_REQUIRE(!psn_in_range(2, 0xFFFFFE, 4));
  STATIC_REQUIRE(!psn_in_range(0xFFFFFD, 0xFFFFFE, 4));
  STATIC_REQUIRE(!psn_in_range(5, 5, 0));
  STATIC_REQUIRE(classify_psn(0, 0) == PsnClass::Expected);
  STATIC_REQUIRE(classify_psn(0xFFFFFF, 0) == PsnClass::Duplicate);
  STATIC_REQUIRE(classify_psn(0xFFFFFF - 0x7FFFFE, 0) == PsnClass::Duplicate);
  STATIC_REQUIRE(classify_psn(1, 0xFFFFFF) == PsnClass::Ahead);
  STATIC_REQUIRE(classify_psn(0x7FFFFF, 0) == PsnClass::Ahead);
}
