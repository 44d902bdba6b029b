// The arithmetic of a recovery epoch: the receiver's record of what it completed, and where each
// new QP starts counting its messages.
#include "core/datapath/recovery_epoch.h"

#include <catch2/catch.hpp>
#include <vector>

#include "core/datapath/size_split.h"
#include "net/epoch_frames.h"

using roce::completed_record;
using roce::first_seq_of_lane;
using roce::members_of_mask;
using roce::qp_of_message;

TEST_CASE("the record: everything below the next sequence is complete but the receives in flight",
          "[unit][epoch]") {
  // Nothing in flight: low is the next sequence and nothing is listed.
  auto none = completed_record(10, std::vector<uint64_t>{});
  CHECK(none.low == 10);
  CHECK(none.done == 0);

  // 5 and 7 in flight below 9: low 5, then 6 and 8 complete, 7 not.
  auto some = completed_record(9, std::vector<uint64_t>{7, 5});
  CHECK(some.low == 5);
  CHECK(some.done == ((1U << 1) | (1U << 3)));

  // Receives posted past the sender's next sequence do not count.
  auto later = completed_record(9, std::vector<uint64_t>{9, 12});
  CHECK(later.low == 9);
  CHECK(later.done == 0);

  // The frame's validation accepts every record the function makes.
  roce::net::EpochReady ready;
  ready.nonce = 1;
  ready.epoch = 1;
  ready.live_members = 1;
  ready.qps = {{0, 5, 0}};
  for (const auto& [next, in_flight] : std::vector<std::pair<uint64_t, std::vector<uint64_t>>>{
           {9, {7, 5}}, {100, {37, 40, 99}}, {65, {1}}, {2, {1}}, {50, {}}}) {
    const auto record = completed_record(next, in_flight);
    ready.low_seq = record.low;
    ready.next_seq = next;
    ready.done = record.done;
    INFO("next " << next);
    CHECK(roce::net::validate_epoch_frame(ready).empty());
    for (const uint64_t seq : in_flight) {
      CHECK_FALSE(ready.complete(seq));
    }
    for (uint64_t seq = 1; seq < next; ++seq) {
      bool flying = false;
      for (const uint64_t f : in_flight) {
        flying = flying || f == seq;
      }
      CHECK(ready.complete(seq) == !flying);
    }
  }
}

TEST_CASE("each new QP starts at the first message of its stride from the record's low",
          "[unit][epoch]") {
  for (int lanes : {1, 2, 3, 4}) {
    for (uint64_t from : {uint64_t{1}, uint64_t{5}, uint64_t{64}, uint64_t{1000}}) {
      for (int lane = 0; lane < lanes; ++lane) {
        const uint64_t first = first_seq_of_lane(from, lane, lanes);
        CHECK(first >= from);
        CHECK(first < from + static_cast<uint64_t>(lanes));
        CHECK(qp_of_message(first, lanes) == lane);
      }
    }
  }
}

TEST_CASE("a member mask lists its members in order", "[unit][epoch]") {
  CHECK(members_of_mask(0).empty());
  CHECK(members_of_mask(0b1011) == std::vector<int>{0, 1, 3});
}
