// Tag matching of isends against the oldest pending multi-receive.
#include "core/datapath/multi_recv_match.h"

#include <array>
#include <catch2/catch.hpp>
#include <vector>

using roce::CtsBuffer;
using roce::CtsEntry;
using roce::kMaxRecvs;
using roce::PendingMultiRecv;

namespace {

PendingMultiRecv pending_with_tags(const std::vector<int>& tags) {
  std::array<CtsEntry, kMaxRecvs> slot{};
  std::vector<CtsBuffer> buffers;
  for (int tag : tags) {
    buffers.push_back(CtsBuffer{0x10, 1024, 1, tag});
  }
  roce::fill_cts_slot(slot, buffers, 1, 0);
  PendingMultiRecv pending;
  pending.load(slot.data(), static_cast<int>(tags.size()));
  return pending;
}

}  // namespace

TEST_CASE("a send takes the first unmatched entry with its tag", "[match]") {
  auto pending = pending_with_tags({3, 5, 3, 7});
  CHECK(pending.find(3) == 0);
  pending.match(0, 11, 100);
  CHECK(pending.find(3) == 2);
  CHECK(pending.find(7) == 3);
  CHECK(pending.find(5) == 1);
  CHECK_FALSE(pending.complete());
}

TEST_CASE("a tag absent from the pending multi-receive belongs to a later one", "[match]") {
  auto pending = pending_with_tags({1, 2});
  CHECK(pending.find(9) == -1);
  pending.match(pending.find(1), 0, 8);
  // A second send from rank 1 before rank 2's first: it must wait for the next multi-receive.
  CHECK(pending.find(1) == -1);
}

TEST_CASE("the group is complete once every entry is matched, in any order", "[match]") {
  auto pending = pending_with_tags({0, 1, 2, 3, 4, 5, 6, 7});
  const std::array<int, 8> order{5, 0, 7, 2, 1, 6, 3, 4};
  for (size_t k = 0; k < order.size(); ++k) {
    CHECK_FALSE(pending.complete());
    int i = pending.find(order[k]);
    REQUIRE(i == order[k]);
    pending.match(i, static_cast<uint16_t>(k), static_cast<uint32_t>(k * 10));
  }
  CHECK(pending.complete());
  CHECK(pending.send_request(5) == 0);
  CHECK(pending.send_size(4) == 70);
}

TEST_CASE("a single receive matches any send with its tag", "[match]") {
  auto pending = pending_with_tags({42});
  CHECK(pending.loaded());
  CHECK(pending.find(41) == -1);
  pending.match(pending.find(42), 3, 0);
  CHECK(pending.complete());
  pending.clear();
  CHECK_FALSE(pending.loaded());
}
