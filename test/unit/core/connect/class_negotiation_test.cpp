// How the two ends of a connection settle the traffic class and service level.
#include "core/connect/class_negotiation.h"

#include <catch2/catch.hpp>

#include "result_checks.h"

using roce::apply_host_override;
using roce::ClassOffer;
using roce::receiver_agree;
using roce::sender_accept;
using roce::test::failure_of;

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
  const std::string error =
      failure_of(receiver_agree(configured(96, "communicator trafficClass"), 104, 0));
  CHECK(error.find("tc 96") != std::string::npos);
  CHECK(error.find("tc 104") != std::string::npos);
  CHECK(error.find("receiver") != std::string::npos);
  CHECK(error.find("sender") != std::string::npos);
  CHECK(error.find("communicator trafficClass") != std::string::npos);
}

TEST_CASE("a receiver without a configured class adopts the sender's", "[tc]") {
  auto agreed = receiver_agree(unconfigured(), 104, 3);
  REQUIRE(agreed);
  CHECK(agreed->traffic_class == 104);
  CHECK(agreed->service_level == 3);
  CHECK_FALSE(agreed->configured);
}

TEST_CASE("equal configured classes agree on both sides", "[tc]") {
  auto r = receiver_agree(configured(106), 106, 0);
  REQUIRE(r);
  CHECK(r->configured);
  auto s = sender_accept(configured(106), r->traffic_class, r->service_level);
  REQUIRE(s);
  CHECK(s->traffic_class == 106);
}

TEST_CASE("a configured sender refuses a reply on another class", "[tc]") {
  const std::string error = failure_of(sender_accept(configured(104), 0, 0));
  CHECK(error.find("tc 104") != std::string::npos);
  CHECK(error.find("tc 0") != std::string::npos);
  CHECK(sender_accept(unconfigured(), 0, 0));
}

TEST_CASE("service levels follow the same rule", "[tc]") {
  ClassOffer receiver = unconfigured();
  receiver.service_level = 3;
  receiver.sl_configured = true;
  const std::string error = failure_of(receiver_agree(receiver, 0, 5));
  CHECK(error.find("NCCL_IB_SL=3") != std::string::npos);
  CHECK(error.find("sl 5") != std::string::npos);
  CHECK(receiver_agree(receiver, 0, 3));
}

TEST_CASE("a host-wide override that rewrites a configured class is an error", "[tc]") {
  roce::ClassAgreement agreed;
  agreed.traffic_class = 104;
  agreed.configured = true;
  const std::string error = failure_of(
      apply_host_override(agreed, 96, "/sys/class/infiniband/mlx5_0/tc/1/traffic_class"));
  CHECK(error.find("96") != std::string::npos);
  CHECK(error.find("104") != std::string::npos);
  CHECK(error.find("mlx5_0/tc/1") != std::string::npos);
}

TEST_CASE("an override equal to the class, or over an unconfigured class, is accepted", "[tc]") {
  roce::ClassAgreement agreed;
  agreed.traffic_class = 104;
  agreed.configured = true;
  CHECK(apply_host_override(agreed, 104, "f"));
  CHECK(apply_host_override(agreed, std::nullopt, "f"));
  agreed.configured = false;
  agreed.traffic_class = 0;
  auto r = apply_host_override(agreed, 96, "f");
  REQUIRE(r);
  CHECK(r->traffic_class == 96);
}
