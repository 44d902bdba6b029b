// Fabric counters: parsing, increases between two readings (resets included), the verdict and
// the wording of the report (loss vs congestion vs both vs nothing), missing counters, reading a
// fixture port directory, and the counters in the JSON line and the Prometheus text.
#include "telemetry/fabric_counters.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "fixture_tree.h"
#include "telemetry/comm_stats.h"
#include "telemetry/stats_output.h"

using namespace roce::telemetry;

namespace {

std::size_t index_of(std::string_view name) {
  for (std::size_t i = 0; i < kFabricCounterCount; ++i) {
    if (name == kFabricCounters[i].name) {
      return i;
    }
  }
  FAIL("no counter " << name);
  return 0;
}

// Every counter readable and 0, except the named increases.
FabricDelta delta_of(std::initializer_list<std::pair<const char*, uint64_t>> risen) {
  FabricDelta d;
  d.fill(uint64_t{0});
  for (const auto& [name, value] : risen) {
    d[index_of(name)] = value;
  }
  d[index_of("port_xmit_data")] = 123456;  // traffic never makes a verdict
  return d;
}

}  // namespace

TEST_CASE("counter files parse as decimal numbers only") {
  CHECK(parse_counter("12\n") == 12u);
  CHECK(parse_counter("0") == 0u);
  CHECK(parse_counter("18446744073709551615\n") == UINT64_MAX);
  CHECK_FALSE(parse_counter(""));
  CHECK_FALSE(parse_counter("\n"));
  CHECK_FALSE(parse_counter("-1\n"));
  CHECK_FALSE(parse_counter("12 packets\n"));
  CHECK_FALSE(parse_counter("N/A\n"));
}

TEST_CASE("increases are after minus before, and a counter that went down counts from zero") {
  FabricSample before;
  FabricSample after;
  before[0] = 10;
  after[0] = 25;
  before[1] = 100;
  after[1] = 7;   // reset (or a wrapped 32-bit counter) in between
  after[2] = 5;   // unreadable at init
  before[3] = 4;  // unreadable now
  const FabricDelta d = fabric_delta(before, after);
  CHECK(d[0] == 15u);
  CHECK(d[1] == 7u);
  CHECK_FALSE(d[2]);
  CHECK_FALSE(d[3]);
}

TEST_CASE("sequence errors and timeouts read as loss, with what to check") {
  const auto d = delta_of({{"packet_seq_err", 12}, {"local_ack_timeout_err", 3}});
  CHECK(fabric_verdict(d) == FabricVerdict::Loss);
  const std::string text = fabric_report(d, "mlx5_0", 1);
  CHECK(text.find("fabric counters on mlx5_0 port 1 since init: packet_seq_err +12, "
                  "local_ack_timeout_err +3: packets were lost") == 0);
  CHECK(text.find("PFC") != std::string::npos);
  CHECK(text.find("ethtool -S") != std::string::npos);
  CHECK(text.find("congested") == std::string::npos);
  CHECK(text.find("port_xmit_data") == std::string::npos);
}

TEST_CASE("ECN marks and CNPs read as congestion, with the PFC/ECN config to check") {
  const auto d = delta_of({{"np_ecn_marked_roce_packets", 500}, {"rp_cnp_handled", 40}});
  CHECK(fabric_verdict(d) == FabricVerdict::Congestion);
  const std::string text = fabric_report(d, "mlx5_1", 2);
  CHECK(text.find("fabric counters on mlx5_1 port 2 since init: np_ecn_marked_roce_packets +500, "
                  "rp_cnp_handled +40: the fabric is congested (ECN marks and CNPs): check the "
                  "PFC/ECN config") == 0);
  CHECK(text.find("NCCL_IB_TC") != std::string::npos);
  CHECK(text.find("lost") == std::string::npos);
}

TEST_CASE("loss and congestion together are both named, loss first") {
  const auto d = delta_of({{"np_cnp_sent", 9}, {"out_of_sequence", 2}});
  CHECK(fabric_verdict(d) == FabricVerdict::LossAndCongestion);
  CHECK(std::string(fabric_verdict_name(fabric_verdict(d))) == "loss and congestion");
  const std::string text = fabric_report(d, "vroce0", 1);
  const auto lost = text.find("out_of_sequence +2: packets were lost");
  const auto congested = text.find("; np_cnp_sent +9: the fabric is congested");
  CHECK(lost != std::string::npos);
  CHECK(congested != std::string::npos);
  CHECK(lost < congested);
}

TEST_CASE("a quiet port says so and a port without readable counters says nothing") {
  const auto quiet = delta_of({});
  CHECK(fabric_verdict(quiet) == FabricVerdict::Quiet);
  CHECK(fabric_report(quiet, "mlx5_0", 1) ==
        "fabric counters on mlx5_0 port 1 since init: no loss or congestion counted");
  FabricDelta none;
  none[index_of("port_rcv_data")] = 5;  // only traffic readable: no verdict possible
  CHECK(fabric_verdict(none) == FabricVerdict::Unknown);
  CHECK(fabric_report(none, "mlx5_0", 1).empty());
}

TEST_CASE("a port directory is read file by file and missing ones are named") {
  roce::test::FixtureTree tree;
  tree.write("ports/1/hw_counters/packet_seq_err", "3\n");
  tree.write("ports/1/hw_counters/np_cnp_sent", "garbage\n");
  tree.write("ports/1/counters/port_xmit_data", "1000\n");
  const FabricSample s = read_fabric_counters(tree.path("ports/1"));
  CHECK(s[index_of("packet_seq_err")] == 3u);
  CHECK_FALSE(s[index_of("np_cnp_sent")]);
  CHECK(s[index_of("port_xmit_data")] == 1000u);
  const std::string missing = missing_counters(s);
  CHECK(missing.find("np_cnp_sent") != std::string::npos);
  CHECK(missing.find("out_of_sequence") != std::string::npos);
  CHECK(missing.find("packet_seq_err") == std::string::npos);
  CHECK(read_fabric_counters(tree.path("nowhere"))[0] == std::nullopt);
}

TEST_CASE("a watch reports increases since its creation and lists itself for the writer") {
  roce::test::FixtureTree tree;
  for (const auto& spec : kFabricCounters) {
    tree.write(std::string("ports/1/") + spec.group + "/" + spec.name, "100\n");
  }
  {
    FabricCounterWatch watch("vroce0", 1, tree.path("ports/1"));
    CHECK(watch.any_readable());
    CHECK(watch.report_since_init().find("no loss or congestion counted") != std::string::npos);
    tree.write("ports/1/hw_counters/np_ecn_marked_roce_packets", "150\n");
    CHECK(watch.report_since_init().find("np_ecn_marked_roce_packets +50: the fabric is "
                                         "congested") != std::string::npos);
    const auto all = FabricCounterWatch::read_all();
    REQUIRE(all.size() == 1);
    CHECK(all[0].device == "vroce0");
    CHECK(all[0].delta[index_of("np_ecn_marked_roce_packets")] == 50u);
  }
  CHECK(FabricCounterWatch::read_all().empty());
  FabricCounterWatch unreadable("mlx5_9", 1, tree.path("missing"));
  CHECK_FALSE(unreadable.any_readable());
  CHECK(unreadable.report_since_init().empty());
  CHECK(FabricCounterWatch::read_all().empty());
}

TEST_CASE("the JSON line and the Prometheus text carry the comm's device's fabric counters") {
  CommStats stats({Direction::Recv, "mlx5_0", "10.0.0.2", 1, 106});
  const CommStatsSnapshot s = stats.snapshot();
  FabricCounterWatch::Reading reading{"mlx5_0", 1, delta_of({{"np_ecn_marked_roce_packets", 7}})};
  reading.delta[index_of("rp_cnp_handled")] = std::nullopt;
  const ProcessInfo p{"node1", 9, "0", 0};
  const std::vector<FabricCounterWatch::Reading> all{reading};
  REQUIRE(fabric_of(s, all) == &all[0]);
  const auto j = nlohmann::json::parse(json_line(s, p, fabric_of(s, all)));
  CHECK(j["fabric_counters"]["np_ecn_marked_roce_packets"] == 7);
  CHECK(j["fabric_counters"]["rp_cnp_handled"].is_null());
  CHECK(j["fabric_verdict"] == "congestion");
  CHECK_FALSE(nlohmann::json::parse(json_line(s, p)).contains("fabric_counters"));
  CommStats other({Direction::Send, "mlx5_1", "10.0.0.3", 1, 106});
  CHECK(fabric_of(other.snapshot(), all) == nullptr);
  const std::string prom = prometheus_text({s}, p, all);
  CHECK(prom.find("# TYPE nccl_roce_port_increase_total counter\n") != std::string::npos);
  CHECK(prom.find("nccl_roce_port_increase_total{host=\"node1\",pid=\"9\",rank=\"0\","
                  "device=\"mlx5_0\",port=\"1\",counter=\"np_ecn_marked_roce_packets\"} 7\n") !=
        std::string::npos);
  CHECK(prom.find("counter=\"rp_cnp_handled\"") == std::string::npos);
  CHECK(prometheus_text({s}, p).find("nccl_roce_port_increase_total") == std::string::npos);
}
