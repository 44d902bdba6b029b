// The fixed-capacity request pool.
#include "core/datapath/request_pool.h"

#include <catch2/catch.hpp>
#include <set>

TEST_CASE("a pool hands out every slot once, then reports exhaustion", "[pool]") {
  roce::RequestPool<int, 32> pool;
  std::set<uint16_t> seen;
  for (int i = 0; i < 32; ++i) {
    const uint16_t slot = pool.take();
    REQUIRE(slot != pool.kNoSlot);
    CHECK(slot < 32);
    CHECK(seen.insert(slot).second);
    CHECK(pool.in_use(slot));
  }
  CHECK(pool.take() == pool.kNoSlot);
  CHECK(pool.available() == 0);
}

TEST_CASE("a returned slot is reused and double returns are refused", "[pool]") {
  roce::RequestPool<int, 4> pool;
  const uint16_t a = pool.take();
  const uint16_t b = pool.take();
  REQUIRE(a != pool.kNoSlot);
  REQUIRE(b != pool.kNoSlot);
  CHECK(pool.give_back(a));
  CHECK_FALSE(pool.give_back(a));
  CHECK_FALSE(pool.give_back(99));
  CHECK(pool.available() == 3);
  const uint16_t c = pool.take();
  REQUIRE(c != pool.kNoSlot);
  CHECK(c == a);
}

TEST_CASE("a slot known to be taken is returned without the checks", "[pool]") {
  roce::RequestPool<int, 2> pool;
  const uint16_t a = pool.take();
  const uint16_t b = pool.take();
  REQUIRE(a != pool.kNoSlot);
  REQUIRE(b != pool.kNoSlot);
  pool.give_back_taken(b);
  CHECK_FALSE(pool.in_use(b));
  CHECK(pool.in_use(a));
  CHECK(pool.available() == 1);
  CHECK_FALSE(pool.give_back(b));  // the ordinary give_back still refuses a second return
  CHECK(pool.take() == b);
}

TEST_CASE("a slot's index is recovered from its address, foreign addresses are not", "[pool]") {
  roce::RequestPool<long, 8> pool;
  const uint16_t a = pool.take();
  REQUIRE(a != pool.kNoSlot);
  long* p = &pool[a];
  CHECK(pool.index_of(p) == a);
  long other = 0;
  CHECK_FALSE(pool.index_of(&other).has_value());
}
