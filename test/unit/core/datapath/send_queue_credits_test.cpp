// Send-queue accounting with unsignaled work requests.
#include "core/datapath/send_queue_credits.h"

#include <catch2/catch.hpp>

using roce::SendQueueCredits;

TEST_CASE("posting stops at the queue depth until a signaled completion retires entries", "[sq]") {
  SendQueueCredits sq(8, 4);
  uint32_t last = 0;
  for (int i = 0; i < 8; ++i) {
    REQUIRE(sq.can_post(1));
    last = sq.post();
  }
  CHECK_FALSE(sq.can_post(1));
  sq.retire(5);
  CHECK(sq.outstanding() == 3);
  CHECK(sq.can_post(5));
  CHECK_FALSE(sq.can_post(6));
  sq.retire(last);
  CHECK(sq.outstanding() == 0);
}

TEST_CASE("an older completion never un-retires entries", "[sq]") {
  SendQueueCredits sq(16, 4);
  for (int i = 0; i < 10; ++i) {
    sq.post();
  }
  sq.retire(8);
  sq.retire(4);
  CHECK(sq.outstanding() == 2);
}

TEST_CASE("a signal is requested every interval of unsignaled posts", "[sq]") {
  SendQueueCredits sq(64, 4);
  int signals = 0;
  for (int i = 0; i < 40; ++i) {
    bool signal = sq.should_signal();
    uint32_t pos = sq.post();
    if (signal) {
      sq.signaled_at(pos);
      ++signals;
    }
  }
  CHECK(signals == 10);
}

TEST_CASE("positions compare correctly across 32-bit wrap-around", "[sq]") {
  SendQueueCredits sq(4, 1);
  // Drive the counters close to the wrap.
  for (uint64_t i = 0; i < 10; ++i) {
    uint32_t pos = sq.post();
    sq.retire(pos);
  }
  // Emulate a long run by posting and retiring in steps.
  uint32_t pos = 0;
  for (uint64_t i = 0; i < (uint64_t{1} << 20); ++i) {
    pos = sq.post();
    sq.retire(pos);
  }
  CHECK(sq.outstanding() == 0);
  CHECK(sq.can_post(4));
}
