// How the two ends of a connection settle the traffic class and service level.
#include "core/connect/class_negotiation.h"

#include <catch2/catch.hpp>

using roce::apply_host_override;
using roce::ClassOffer;
using roce::receiver_agree;
using roce::sender_accept;

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

TEST_CASE("a configured receiver refuses a sender on another class, naming both", "[tc]") {
  std::string error;
  auto agreed = receiver_agree(configured(96, "communicator trafficClass"), 104, 0, &error);
  REQUIRE_FALSE(agreed);
  CHECK(error.find("tc 96") != std::string::npos);
  CHECK(error.find("tc 104") != std::string::npos);
  CHECK(error.find("receiver") != std::string::npos);
  CHECK(error.find("sender") != std::string::npos);
  CHECK(error.find("communicator trafficClass") != std::string::npos);
}

TEST_CASE("a receiver without a configured class adopts the sender's", "[tc]") {
  std::string error;
  auto agreed = receiver_agree(unconfigured(), 104, 3, &error);
  REQUIRE(agreed);
  CHECK(agreed->traffic_class == 104);
  CHECK(agreed->service_level == 3);
  CHECK_FALSE(agreed->configured);
}

TEST_CASE("equal configured classes agree on both sides", "[tc]") {
  std::string error;
  auto r = receiver_agree(configured(106), 106, 0, &error);
  REQUIRE(r);
  CHECK(r->configured);
  auto s = sender_accept(configured(106), r->traffic_class, r->service_level, &error);
  REQUIRE(s);
  CHECK(s->traffic_class == 106);
}

TEST_CASE("a configured sender refuses a reply on another class", "[tc]") {
  std::string error;
  CHECK_FALSE(sender_accept(configured(104), 0, 0, &error));
  CHECK(error.find("tc 104") != std::string::npos);
  CHECK(error.find("tc 0") != std::string::npos);
  CHECK(sender_accept(unconfigured(), 0, 0, &error));
}

TEST_CASE("service levels follow the same rule", "[tc]") {
  std::string error;
  ClassOffer receiver = unconfigured();
  receiver.service_level = 3;
  receiver.sl_configured = true;
  CHECK_FALSE(receiver_agree(receiver, 0, 5, &error));
  CHECK(error.find("NCCL_IB_SL=3") != std::string::npos);
  CHECK(error.find("sl 5") != std::string::npos);
  CHECK(receiver_agree(receiver, 0, 3, &error));
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
