// Agreement on the traffic class and service level between the two ends of a connection.
#include "core/class_negotiation.h"

#include <catch2/catch.hpp>

using roce::agree_on_class;
using roce::apply_host_override;
using roce::ClassOffer;

namespace {

ClassOffer configured(int tc, const char* source = "NCCL_ROCE_TC") {
  ClassOffer o;
  o.traffic_class = tc;
  o.configured = true;
  o.source = source;
  return o;
}

ClassOffer unconfigured() {
  ClassOffer o;
  o.source = "default";
  return o;
}

}  // namespace

TEST_CASE("two configured classes that differ are refused, naming both classes and sides", "[tc]") {
  std::string error;
  auto agreed = agree_on_class(configured(104), configured(96, "communicator trafficClass"),
                               "sender", "receiver", &error);
  REQUIRE_FALSE(agreed);
  CHECK(error.find("tc 104") != std::string::npos);
  CHECK(error.find("tc 96") != std::string::npos);
  CHECK(error.find("sender") != std::string::npos);
  CHECK(error.find("receiver") != std::string::npos);
  CHECK(error.find("communicator trafficClass") != std::string::npos);
}

TEST_CASE("equal configured classes agree", "[tc]") {
  std::string error;
  auto agreed = agree_on_class(configured(106), configured(106), "sender", "receiver", &error);
  REQUIRE(agreed);
  CHECK(agreed->traffic_class == 106);
  CHECK(agreed->configured);
}

TEST_CASE("a side without configuration adopts the peer's configured class", "[tc]") {
  std::string error;
  auto a = agree_on_class(unconfigured(), configured(104), "receiver", "sender", &error);
  REQUIRE(a);
  CHECK(a->traffic_class == 104);
  CHECK(a->configured);
  auto b = agree_on_class(configured(104), unconfigured(), "sender", "receiver", &error);
  REQUIRE(b);
  CHECK(b->traffic_class == 104);
}

TEST_CASE("with no configuration on either side the class is 0 and not enforced", "[tc]") {
  std::string error;
  auto a = agree_on_class(unconfigured(), unconfigured(), "sender", "receiver", &error);
  REQUIRE(a);
  CHECK(a->traffic_class == 0);
  CHECK_FALSE(a->configured);
}

TEST_CASE("service levels follow the same rule", "[tc]") {
  std::string error;
  ClassOffer local = unconfigured();
  ClassOffer peer = unconfigured();
  local.service_level = 3;
  local.sl_configured = true;
  auto a = agree_on_class(local, peer, "sender", "receiver", &error);
  REQUIRE(a);
  CHECK(a->service_level == 3);
  peer.service_level = 5;
  peer.sl_configured = true;
  CHECK_FALSE(agree_on_class(local, peer, "sender", "receiver", &error));
  CHECK(error.find("NCCL_IB_SL=3") != std::string::npos);
  CHECK(error.find("NCCL_IB_SL=5") != std::string::npos);
}

TEST_CASE("a host-wide override that rewrites a configured class is an error", "[tc]") {
  std::string error;
  roce::ClassAgreement agreed;
  agreed.traffic_class = 104;
  agreed.configured = true;
  auto r =
      apply_host_override(agreed, 96, "/sys/class/infiniband/mlx5_0/tc/1/traffic_class", &error);
  REQUIRE_FALSE(r);
  CHECK(error.find("96") != std::string::npos);
  CHECK(error.find("104") != std::string::npos);
  CHECK(error.find("mlx5_0/tc/1") != std::string::npos);
}

TEST_CASE("an override equal to the class, or over an unconfigured class, is accepted", "[tc]") {
  std::string error;
  roce::ClassAgreement agreed;
  agreed.traffic_class = 104;
  agreed.configured = true;
  CHECK(apply_host_override(agreed, 104, "f", &error));
  CHECK(apply_host_override(agreed, std::nullopt, "f", &error));
  agreed.configured = false;
  agreed.traffic_class = 0;
  auto r = apply_host_override(agreed, 96, "f", &error);
  REQUIRE(r);
  CHECK(r->traffic_class == 96);
}
