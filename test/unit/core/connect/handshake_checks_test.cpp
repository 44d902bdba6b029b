// Connection-setup decisions on handshake messages.
#include "core/connect/handshake_checks.h"

#include <catch2/catch.hpp>

#include "core/datapath/cts_ring.h"
#include "core/datapath/data_path_limits.h"

using namespace roce;

namespace {

net::ConnectRequest valid_request() {
  net::ConnectRequest r;
  r.nonce = 42;
  r.cts_ring = cts_ring_geometry(0x10000, 7);
  r.max_recvs = kMaxRecvs;
  return r;
}

}  // namespace

TEST_CASE("a request with this build's ring geometry is accepted", "[handshake]") {
  CHECK_FALSE(check_connect_request(valid_request()));
}

TEST_CASE("a request with another ring geometry or maxRecvs is refused with a reason",
          "[handshake]") {
  auto r = valid_request();
  r.cts_ring.slot_count = 128;
  auto refusal = check_connect_request(r);
  REQUIRE(refusal);
  CHECK(refusal->reason == net::RejectReason::BadSlots);
  CHECK(refusal->text.find("128 slots") != std::string::npos);
  r = valid_request();
  r.max_recvs = 1;
  refusal = check_connect_request(r);
  REQUIRE(refusal);
  CHECK(refusal->reason == net::RejectReason::BadMaxRecvs);
}

TEST_CASE("a reply must answer every offered QP and use this build's sizes area", "[handshake]") {
  net::ConnectReply reply;
  reply.endpoint.qps.resize(2);
  reply.sizes_area = sizes_area_geometry(0x2000, 9);
  CHECK(check_connect_reply(reply, 2));
  const roce::Status refused = check_connect_reply(reply, 4);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().find("2 QPs") != std::string::npos);
  reply.sizes_area.slot_size = 4;
  CHECK_FALSE(check_connect_reply(reply, 2));
}

TEST_CASE("the link runs at the smaller of the two ports' MTUs", "[handshake]") {
  CHECK(link_mtu(IBV_MTU_4096, IBV_MTU_1024) == IBV_MTU_1024);
  CHECK(link_mtu(IBV_MTU_1024, IBV_MTU_4096) == IBV_MTU_1024);
  CHECK(link_mtu(IBV_MTU_2048, IBV_MTU_2048) == IBV_MTU_2048);
}

TEST_CASE("IPv4-mapped GIDs bind the IPv4 address, others the IPv6 address", "[handshake]") {
  std::array<uint8_t, 16> v4{};
  v4[10] = v4[11] = 0xff;
  v4[12] = 127;
  v4[13] = 0;
  v4[14] = 4;
  v4[15] = 9;
  auto a = bind_address_for_gid(v4);
  CHECK(a.family == AddressFamily::Ipv4);
  CHECK(a.bytes[0] == 127);
  CHECK(a.bytes[3] == 9);
  CHECK(a.bytes[4] == 0);
  std::array<uint8_t, 16> v6{};
  v6[0] = 0xfd;
  v6[15] = 1;
  auto b = bind_address_for_gid(v6);
  CHECK(b.family == AddressFamily::Ipv6);
  CHECK(b.bytes == v6);
}
