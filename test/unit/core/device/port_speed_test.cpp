// Port speed from IB speed and width codes.
#include "core/device/port_speed.h"

#include <catch2/catch.hpp>

using namespace roce;

TEST_CASE("every documented lane speed code maps to its nominal rate", "[port_speed]") {
  CHECK(lane_speed_mbps(1) == 2500);      // SDR
  CHECK(lane_speed_mbps(2) == 5000);      // DDR
  CHECK(lane_speed_mbps(4) == 10000);     // QDR
  CHECK(lane_speed_mbps(8) == 10000);     // FDR10
  CHECK(lane_speed_mbps(16) == 14000);    // FDR
  CHECK(lane_speed_mbps(32) == 25000);    // EDR
  CHECK(lane_speed_mbps(64) == 50000);    // HDR
  CHECK(lane_speed_mbps(128) == 100000);  // NDR
  CHECK(lane_speed_mbps(256) == 200000);  // XDR, only reachable through active_speed_ex
}

TEST_CASE("width codes map to lane counts, including 2X", "[port_speed]") {
  CHECK(lane_count(1) == 1);
  CHECK(lane_count(2) == 4);
  CHECK(lane_count(4) == 8);
  CHECK(lane_count(8) == 12);
  CHECK(lane_count(16) == 2);
}

TEST_CASE("port speed is lane rate times lanes", "[port_speed]") {
  CHECK(port_speed_mbps(128, 2) == 400000);   // 4X NDR: a 400G ConnectX-7 port
  CHECK(port_speed_mbps(64, 2) == 200000);    // 4X HDR
  CHECK(port_speed_mbps(32, 2) == 100000);    // 4X EDR
  CHECK(port_speed_mbps(256, 2) == 800000);   // 4X XDR
  CHECK(port_speed_mbps(128, 16) == 200000);  // 2X NDR
  CHECK(port_speed_mbps(32, 1) == 25000);     // 1X EDR: a 25G port
}

TEST_CASE("unknown speed or width codes give no speed instead of a guess", "[port_speed]") {
  CHECK_FALSE(port_speed_mbps(0, 2).has_value());
  CHECK_FALSE(port_speed_mbps(3, 2).has_value());
  CHECK_FALSE(port_speed_mbps(512, 2).has_value());
  CHECK_FALSE(port_speed_mbps(128, 0).has_value());
  CHECK_FALSE(port_speed_mbps(128, 3).has_value());
}

TEST_CASE("speeds are described for logs, unknown codes by number", "[port_speed]") {
  CHECK(describe_port_speed(128, 2) == "4X NDR (400 Gb/s)");
  CHECK(describe_port_speed(1, 1) == "1X SDR (2.5 Gb/s)");
  CHECK(describe_port_speed(7, 2) == "4X speed code 7 (unknown rate)");
  CHECK(describe_port_speed(128, 5) == "width code 5 NDR (unknown rate)");
}

TEST_CASE("NCCL's clamped reading never gives 0: an unknown code counts as the highest known",
          "[port_speed]") {
  CHECK(roce::clamped_port_speed_mbps(128, 2) == 400000);       // known: 4X NDR
  CHECK(roce::clamped_port_speed_mbps(512, 2) == 800000);       // newer than XDR: XDR
  CHECK(roce::clamped_port_speed_mbps(0, 2) == 800000);         // no bit: the last entry
  CHECK(roce::clamped_port_speed_mbps(64 | 512, 2) == 200000);  // lowest known bit: HDR
  CHECK(roce::clamped_port_speed_mbps(32, 64) == 25000 * 2);    // unknown width: 2X
}
