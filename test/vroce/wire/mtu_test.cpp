// Path MTU conversions, the netdev-MTU rules, the RNR timer table and the ACK timeout.
#include "wire/mtu.h"

#include <catch2/catch.hpp>

using namespace vroce::wire;
using namespace std::chrono_literals;

TEST_CASE("mtu: ibv_mtu and bytes convert both ways", "[wire][mtu]") {
  CHECK(mtu_bytes(IBV_MTU_256) == 256u);
  CHECK(mtu_bytes(IBV_MTU_1024) == 1024u);
  CHECK(mtu_bytes(IBV_MTU_4096) == 4096u);
  CHECK_FALSE(mtu_bytes(0));
  CHECK_FALSE(mtu_bytes(6));
  CHECK(mtu_enum_from_bytes(2048) == IBV_MTU_2048);
  CHECK_FALSE(mtu_enum_from_bytes(1500));
  CHECK(mtu_enum_floor(1500) == IBV_MTU_1024);
  CHECK(mtu_enum_floor(9000) == IBV_MTU_4096);
  CHECK(mtu_enum_floor(256) == IBV_MTU_256);
  CHECK_FALSE(mtu_enum_floor(255));
}

TEST_CASE("mtu: payload room and active_mtu for netdev MTUs", "[wire][mtu]") {
  // IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 + ICRC 4 = 64 bytes around the payload.
  CHECK(roce_overhead(IpFamily::V4, 20) == 64);
  CHECK(roce_overhead(IpFamily::V6, 20) == 84);
  CHECK(max_payload_for_netdev(1500, IpFamily::V4, 20) == 1436);
  CHECK(max_payload_for_netdev(1500, IpFamily::V6, 20) == 1416);
  CHECK(max_payload_for_netdev(1090, IpFamily::V4, 20) == 1024);  // exactly IBV_MTU_1024
  CHECK(max_payload_for_netdev(1087, IpFamily::V4, 20) == 1020);  // 1021 + 3 pad would not fit
  CHECK(max_payload_for_netdev(64, IpFamily::V4, 20) == 0);
  // The kernel's rule: 1500 -> 1024, 9000 -> 4096, loopback's 65536 -> 4096.
  CHECK(active_mtu_for_netdev(1500) == IBV_MTU_1024);
  CHECK(active_mtu_for_netdev(9000) == IBV_MTU_4096);
  CHECK(active_mtu_for_netdev(65536) == IBV_MTU_4096);
  CHECK(active_mtu_for_netdev(2144) == IBV_MTU_2048);
  CHECK(active_mtu_for_netdev(2143) == IBV_MTU_1024);
  CHECK_FALSE(active_mtu_for_netdev(300));
}

TEST_CASE("mtu: RNR NAK timer codes", "[wire][mtu]") {
  CHECK(rnr_timer(0) == 655360us);
  CHECK(rnr_timer(1) == 10us);
  CHECK(rnr_timer(5) == 60us);
  CHECK(rnr_timer(14) == 1280us);
  CHECK(rnr_timer(18) == 5120us);
  CHECK(rnr_timer(31) == 491520us);
  CHECK_FALSE(rnr_timer(32));
  for (unsigned c = 2; c < 32; ++c) {
    CHECK(*rnr_timer(c) > *rnr_timer(c - 1));
  }
  CHECK(rnr_timer_code_at_least(10us) == 1);
  CHECK(rnr_timer_code_at_least(11us) == 2);
  CHECK(rnr_timer_code_at_least(1280us) == 14);
  CHECK(rnr_timer_code_at_least(500ms) == 0);
  CHECK(rnr_timer_code_at_least(1s) == 0);
}

TEST_CASE("mtu: local ACK timeout is 4.096 us * 2^timeout", "[wire][mtu]") {
  CHECK(local_ack_timeout(0)->infinite);
  CHECK(local_ack_timeout(1)->period == 8192ns);
  CHECK(local_ack_timeout(14)->period == 67108864ns);    // about 67 ms
  CHECK(local_ack_timeout(20)->period == 4294967296ns);  // NCCL's default, about 4.3 s
  CHECK(local_ack_timeout(31)->period == std::chrono::nanoseconds(4096ll << 31));  // about 2.4 h
  CHECK_FALSE(local_ack_timeout(31)->infinite);
  CHECK_FALSE(local_ack_timeout(32));
}
