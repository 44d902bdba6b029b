// The fixed-capacity request pool.
#include "core/datapath/request_pool.h"

#include <catch2/catch.hpp>
#include <set>

TEST_CASE("a pool hands out every slot once, then reports exhaustion", "[pool]") {
  roce::RequestPool<int, 32> pool;
  std::set<uint16_t> seen;
  for (int i = 0; i < 32; ++i) {
    auto slot = pool.take();
    REQUIRE(slot.has_value());
    CHECK(*slot < 32);
    CHECK(seen.insert(*slot).second);
    CHECK(pool.in_use(*slot));
  }
  CHECK_FALSE(pool.take().has_value());
  CHECK(pool.available() == 0);
}

TEST_CASE("a returned slot is reused and double returns are refused", "[pool]") {
  roce::RequestPool<int, 4> pool;
  auto a = pool.take();
  auto b = pool.take();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(pool.give_back(*a));
  CHECK_FALSE(pool.give_back(*a));
  CHECK_FALSE(pool.give_back(99));
  CHECK(pool.available() == 3);
  auto c = pool.take();
  REQUIRE(c);
  CHECK(*c == *a);
}

TEST_CASE("a slot known to be taken is returned without the checks", "[pool]") {
  roce::RequestPool<int, 2> pool;
  auto a = pool.take();
  auto b = pool.take();
  REQUIRE(a);
  REQUIRE(b);
  pool.give_back_taken(*b);
  CHECK_FALSE(pool.in_use(*b));
  CHECK(pool.in_use(*a));
  CHECK(pool.available() == 1);
  CHECK_FALSE(pool.give_back(*b));  // the ordinary give_back still refuses a second return
  CHECK(pool.take() == b);
}

TEST_CASE("a slot's index is recovered from its address, foreign addresses are not", "[pool]") {
  roce::RequestPool<long, 8> pool;
  auto a = pool.take();
  REQUIRE(a);
  long* p = &pool[*a];
  CHECK(pool.index_of(p) == a);
  long other = 0;
  CHECK_FALSE(pool.index_of(&other).has_value());
}
