// Traffic class in force: environment over communicator over 0, FIFO_TC kept apart, SL, and
// the DSCP/ECN breakdown printed in logs.
#include "core/device/traffic_class.h"

#include <catch2/catch.hpp>

#include "result_checks.h"

namespace {

roce::TrafficClassChoice resolve(const roce::Config& config, int comm_class) {
  return roce::test::value_of(roce::resolve_traffic_class(config, comm_class));
}

std::string error_of(const roce::Config& config, int comm_class) {
  return roce::test::failure_of(roce::resolve_traffic_class(config, comm_class));
}

roce::Config with_env_class(int tc, roce::TrafficClassSource source) {
  roce::Config config;
  config.traffic_class = tc;
  config.traffic_class_source = source;
  return config;
}

}  // namespace

TEST_CASE("with no class configured anywhere the connection runs on class 0, SL 0", "[tc]") {
  const roce::TrafficClassChoice choice = resolve({}, roce::kTrafficClassUndefined);
  CHECK(choice.traffic_class == 0);
  CHECK(choice.source == roce::TrafficClassSource::Default);
  CHECK(choice.service_level == 0);
  CHECK_FALSE(choice.overridden_comm_class.has_value());
}

TEST_CASE("the communicator's class applies when the environment sets none", "[tc]") {
  const roce::TrafficClassChoice choice = resolve({}, 96);
  CHECK(choice.traffic_class == 96);
  CHECK(choice.source == roce::TrafficClassSource::CommConfig);
}

TEST_CASE("an environment class wins over the communicator's and records what it overrode",
          "[tc]") {
  const roce::Config config = with_env_class(104, roce::TrafficClassSource::NcclRoceDscp);
  const roce::TrafficClassChoice choice = resolve(config, 96);
  CHECK(choice.traffic_class == 104);
  CHECK(choice.source == roce::TrafficClassSource::NcclRoceDscp);
  CHECK(choice.overridden_comm_class == 96);
  // Same class on both sides: nothing was overridden.
  CHECK_FALSE(resolve(config, 104).overridden_comm_class.has_value());
  CHECK_FALSE(resolve(config, roce::kTrafficClassUndefined).overridden_comm_class.has_value());
}

TEST_CASE("a communicator class outside 0..255 is an error naming the fix", "[tc]") {
  CHECK_THAT(error_of({}, 256), Catch::StartsWith("the communicator's trafficClass 256 is out of "
                                                  "range 0..255") &&
                                    Catch::Contains("ncclConfig_t"));
  CHECK_THAT(error_of({}, -2), Catch::Contains("trafficClass -2"));
}

TEST_CASE("NCCL_IB_FIFO_TC does not change the class in force", "[tc]") {
  roce::Config config;
  config.fifo_traffic_class = 96;
  CHECK(resolve(config, 104).traffic_class == 104);
  CHECK(resolve(config, roce::kTrafficClassUndefined).traffic_class == 0);
}

TEST_CASE("the service level is NCCL_IB_SL, else 0, never derived from the class", "[tc]") {
  roce::Config config = with_env_class(104, roce::TrafficClassSource::NcclIbTc);
  CHECK(resolve(config, 96).service_level == 0);
  config.service_level = 3;
  CHECK(resolve(config, 96).service_level == 3);
  config.service_level = 16;
  CHECK_THAT(error_of(config, 96), Catch::Contains("NCCL_IB_SL=16 is outside 0..15"));
}

TEST_CASE("a traffic class prints as its DSCP and ECN parts", "[tc]") {
  CHECK(roce::describe_traffic_class(106) == "tc 106 = dscp 26 + ect(0)");
  CHECK(roce::describe_traffic_class(104) == "tc 104 = dscp 26 + not-ect");
  CHECK(roce::describe_traffic_class(105) == "tc 105 = dscp 26 + ect(1)");
  CHECK(roce::describe_traffic_class(255) == "tc 255 = dscp 63 + ce");
  CHECK(roce::describe_traffic_class(0) == "tc 0 = dscp 0 + not-ect");
  CHECK(roce::describe_traffic_class(300) == "tc 300 (invalid, outside 0..255)");
}

TEST_CASE("traffic class and service level validation", "[tc]") {
  CHECK(roce::valid_traffic_class(0));
  CHECK(roce::valid_traffic_class(255));
  CHECK_FALSE(roce::valid_traffic_class(256));
  CHECK_FALSE(roce::valid_traffic_class(-1));
  CHECK(roce::valid_service_level(15));
  CHECK_FALSE(roce::valid_service_level(16));
  STATIC_REQUIRE(roce::dscp_of(104) == 26);
  STATIC_REQUIRE(roce::ecn_of(106) == 2);
}

TEST_CASE("every traffic-class source has a name for the init banner", "[tc]") {
  using roce::TrafficClassSource;
  CHECK(std::string(roce::traffic_class_source_name(TrafficClassSource::NcclRoceTc)) ==
        "NCCL_ROCE_TC");
  CHECK(std::string(roce::traffic_class_source_name(TrafficClassSource::NcclRoceDscp)) ==
        "NCCL_ROCE_DSCP");
  CHECK(std::string(roce::traffic_class_source_name(TrafficClassSource::NcclIbTc)) == "NCCL_IB_TC");
  CHECK(std::string(roce::traffic_class_source_name(TrafficClassSource::CommConfig)) ==
        "communicator trafficClass");
  CHECK(std::string(roce::traffic_class_source_name(TrafficClassSource::Default)) == "default");
}
