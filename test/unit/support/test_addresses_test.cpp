// The test address allocator (test/support/test_addresses.h): blocks stay inside 127.128.0.0/9,
// a block held by one claim is skipped by the next, a released block can be claimed again, and
// ROCE_TEST_ADDRESSES is parsed strictly.
#include "test_addresses.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace roce::test;

TEST_CASE("test address blocks lie inside 127.128.0.0/9 and never overlap", "[test_addresses]") {
  CHECK(ipv4_text(block_base(0)) == "127.128.0.0");
  CHECK(ipv4_text(block_base(kBlockCount - 1) + kAddressesPerBlock - 1) == "127.255.255.255");
  CHECK(block_base(kBlockCount) == block_base(0));  // wraps inside the region
  CHECK(block_base(1) - block_base(0) == kAddressesPerBlock);
}

TEST_CASE("a claimed test address block is skipped by the next claim until it is released",
          "[test_addresses]") {
  const uint32_t start = (static_cast<uint32_t>(getpid()) * 7919U + 12345U) % kBlockCount;
  int first_fd = -1;
  int second_fd = -1;
  const auto first = claim_block(start, &first_fd);
  const auto second = claim_block(start, &second_fd);
  REQUIRE(first.size() == kAddressesPerBlock);
  REQUIRE(second.size() == kAddressesPerBlock);
  std::set<std::string> all(first.begin(), first.end());
  all.insert(second.begin(), second.end());
  CHECK(all.size() == 2 * kAddressesPerBlock);
  close(first_fd);
  int again_fd = -1;
  const auto again = claim_block(start, &again_fd);
  CHECK(again == first);
  close(second_fd);
  close(again_fd);
}

TEST_CASE("ROCE_TEST_ADDRESSES must hold one whole block of loopback addresses",
          "[test_addresses]") {
  std::string error;
  std::string block;
  for (int i = 0; i < kAddressesPerBlock; ++i) {
    block += "127.200.0." + std::to_string(i) + " ";
  }
  CHECK(parse_address_list(block, &error).size() == kAddressesPerBlock);
  CHECK(parse_address_list("127.200.0.1 127.200.0.2", &error).empty());
  CHECK(error == "expected 16 addresses, found 2");
  CHECK(parse_address_list("10.0.0.1 " + block, &error).empty());
  CHECK(error == "'10.0.0.1' is not a 127.x.y.z address");
}

TEST_CASE("vroce device lists name consecutive addresses of the process's block",
          "[test_addresses]") {
  const std::string list = vroce_device_list({"ta", "tb"}, 3);
  CHECK(list == "ta=" + test_address(3) + ",tb=" + test_address(4));
  CHECK(test_address(3) != test_address(4));
  CHECK_THROWS_WITH(test_address(kAddressesPerBlock), Catch::Contains("outside 0..15"));
}
