// QP transition attribute checks.
#include "verbs/qp_attributes.h"

#include <catch2/catch.hpp>

using namespace roce::verbs;

namespace {

RtrAttributes valid_rtr() {
  RtrAttributes rtr;
  rtr.dgid.raw[10] = 0xff;
  rtr.dgid.raw[11] = 0xff;
  rtr.dgid.raw[12] = 10;
  rtr.dgid.raw[15] = 2;
  rtr.sgid_index = 3;
  rtr.traffic_class = 104;
  rtr.path_mtu = IBV_MTU_4096;
  rtr.dest_qpn = 0x1234;
  return rtr;
}

}  // namespace

TEST_CASE("valid attributes pass every check", "[qp_attributes]") {
  const DeviceLimits limits;
  CHECK(check(InitAttributes{0, 1, IBV_ACCESS_REMOTE_WRITE}, limits).has_value());
  CHECK(check(valid_rtr(), limits).has_value());
  CHECK(check(RtsAttributes{}, limits).has_value());
}

TEST_CASE("INIT checks name the port, the pkey index or the access bits", "[qp_attributes]") {
  DeviceLimits limits;
  limits.phys_port_cnt = 2;
  CHECK(check(InitAttributes{0, 3, 0}, limits).error().find("port 3") != std::string::npos);
  CHECK_FALSE(check(InitAttributes{0, 0, 0}, limits).has_value());
  CHECK(check(InitAttributes{1, 1, 0}, limits).error().find("pkey_index 1") != std::string::npos);
  CHECK(check(InitAttributes{0, 1, IBV_ACCESS_MW_BIND}, limits).error().find("access") !=
        std::string::npos);
}

TEST_CASE("RTR checks name the attribute at fault", "[qp_attributes]") {
  const DeviceLimits limits;
  auto problem = [&](auto mutate) {
    RtrAttributes rtr = valid_rtr();
    mutate(rtr);
    return roce::error_text(check(rtr, limits));
  };
  CHECK(problem([](RtrAttributes& a) { a.dest_qpn = 0; }).find("dest_qpn") == 0);
  CHECK(problem([](RtrAttributes& a) { a.dest_qpn = 1u << 24; }).find("dest_qpn 0x1000000") == 0);
  CHECK(problem([](RtrAttributes& a) { a.rq_psn = 1u << 24; }).find("rq_psn") == 0);
  CHECK(problem([](RtrAttributes& a) { a.min_rnr_timer = 32; }).find("min_rnr_timer 32") == 0);
  CHECK(problem([](RtrAttributes& a) { a.max_dest_rd_atomic = 17; }).find("max_dest_rd_atomic") ==
        0);
  CHECK(problem([](RtrAttributes& a) { a.hop_limit = 0; }).find("hop_limit 0") == 0);
  CHECK(problem([](RtrAttributes& a) { a.service_level = 16; }).find("service_level 16") == 0);
  CHECK(problem([](RtrAttributes& a) { a.dgid = ibv_gid{}; }).find("dgid") == 0);
  CHECK(problem([](RtrAttributes& a) { a.path_mtu = static_cast<ibv_mtu>(0); }).find("path_mtu") ==
        0);
}

TEST_CASE("RTS checks name timeout, retry counts, PSN and read depth", "[qp_attributes]") {
  const DeviceLimits limits;
  CHECK(check(RtsAttributes{32, 7, 7, 0, 1}, limits).error().find("timeout 32") == 0);
  CHECK(check(RtsAttributes{20, 8, 7, 0, 1}, limits).error().find("retry_cnt 8") == 0);
  CHECK(check(RtsAttributes{20, 7, 8, 0, 1}, limits).error().find("rnr_retry 8") == 0);
  CHECK(check(RtsAttributes{20, 7, 7, 1u << 24, 1}, limits).error().find("sq_psn") == 0);
  CHECK(check(RtsAttributes{20, 7, 7, 0, 17}, limits).error().find("max_rd_atomic 17") == 0);
}

TEST_CASE("descriptions carry every attribute with its value", "[qp_attributes]") {
  const std::string text = describe(valid_rtr());
  CHECK(text.find("dgid ::ffff:10.0.0.2") != std::string::npos);
  CHECK(text.find("sgid_index 3") != std::string::npos);
  CHECK(text.find("traffic_class 104") != std::string::npos);
  CHECK(text.find("path_mtu 4096") != std::string::npos);
  CHECK(text.find("dest_qpn 0x1234") != std::string::npos);
  CHECK(describe(RtsAttributes{}) ==
        "timeout 20, retry_cnt 7, rnr_retry 7, sq_psn 0x0, max_rd_atomic 1");
}

TEST_CASE("MTU enums convert to bytes", "[qp_attributes]") {
  CHECK(mtu_bytes(IBV_MTU_256) == 256);
  CHECK(mtu_bytes(IBV_MTU_1024) == 1024);
  CHECK(mtu_bytes(IBV_MTU_4096) == 4096);
  CHECK(is_valid_mtu(5));
  CHECK_FALSE(is_valid_mtu(0));
  CHECK_FALSE(is_valid_mtu(6));
}
