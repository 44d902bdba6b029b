// Per-comm telemetry: histogram buckets and percentiles, the stall schedule, the summary line,
// the JSON lines and Prometheus text, and the registry's bounded memory of closed comms.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "telemetry/clock.h"
#include "telemetry/comm_stats.h"
#include "telemetry/latency_histogram.h"
#include "telemetry/stall_watch.h"
#include "telemetry/stats_output.h"
#include "telemetry/stats_registry.h"
#include "telemetry/stats_writer.h"

using namespace roce::telemetry;

TEST_CASE("histogram buckets are four to an octave and cover their values") {
  CHECK(LatencyHistogram::bucket_of(0) == 0);
  CHECK(LatencyHistogram::bucket_of(3) == 3);
  CHECK(LatencyHistogram::bucket_of(4) == 4);
  CHECK(LatencyHistogram::bucket_of(7) == 7);
  CHECK(LatencyHistogram::bucket_of(8) == 8);
  CHECK(LatencyHistogram::bucket_of(9) == 8);
  CHECK(LatencyHistogram::bucket_of(10) == 9);
  for (uint64_t v : {1ULL, 5ULL, 17ULL, 1000ULL, 12'345ULL, 999'999'999ULL, 1ULL << 39}) {
    const int b = LatencyHistogram::bucket_of(v);
    CHECK(LatencyHistogram::lower_bound(b) <= v);
    CHECK(v < LatencyHistogram::lower_bound(b + 1));
    // Each bucket is at most 25% wide.
    CHECK(LatencyHistogram::lower_bound(b + 1) - LatencyHistogram::lower_bound(b) <=
          std::max<uint64_t>(1, LatencyHistogram::lower_bound(b) / 4));
  }
  CHECK(LatencyHistogram::bucket_of(~0ULL) == LatencyHistogram::kBuckets - 1);
}

TEST_CASE("histogram percentiles are within a bucket of the exact ones") {
  LatencyHistogram h;
  CHECK(h.snapshot().percentile_ns(50) == 0);
  for (uint64_t i = 1; i <= 1000; ++i) {
    h.record(i * 1000);  // 1..1000 us
  }
  const auto s = h.snapshot();
  CHECK(s.total() == 1000);
  CHECK(s.percentile_ns(50) == Approx(500'000).epsilon(0.13));
  CHECK(s.percentile_ns(99) == Approx(990'000).epsilon(0.13));
  CHECK(s.percentile_ns(100) == Approx(1'000'000).epsilon(0.13));
  CHECK(s.percentile_ns(1) == Approx(10'000).epsilon(0.13));
}

TEST_CASE("a stall is reported at the threshold, then each time the wait doubles") {
  StallWatch watch(100, 1e6);  // ms; times in ns
  const uint64_t ms = 1'000'000;
  const uint64_t t0 = 5'000 * ms;
  CHECK_FALSE(watch.warn_after(t0, t0 + 50 * ms).has_value());
  CHECK(watch.warn_after(t0, t0 + 120 * ms) == 120);
  CHECK_FALSE(watch.warn_after(t0, t0 + 150 * ms).has_value());
  CHECK(watch.warn_after(t0, t0 + 210 * ms) == 210);
  CHECK_FALSE(watch.warn_after(t0, t0 + 390 * ms).has_value());
  CHECK(watch.warn_after(t0, t0 + 1000 * ms) == 1000);  // past 400 and 800: one line
  CHECK_FALSE(watch.warn_after(t0, t0 + 1500 * ms).has_value());
  CHECK(watch.ended(t0));        // it had been reported
  CHECK_FALSE(watch.ended(t0));  // once
  // A new wait starts over.
  CHECK_FALSE(watch.warn_after(t0 + 2000 * ms, t0 + 2050 * ms).has_value());
  CHECK(watch.warn_after(t0 + 2000 * ms, t0 + 2100 * ms) == 100);
  CHECK_FALSE(StallWatch(0, 1e6).enabled());
  CHECK_FALSE(StallWatch(0, 1e6).warn_after(0, 1000).has_value());
}

TEST_CASE("counters count every request; the latency histogram one in sample_every") {
  CommStats every({Direction::Recv, "mlx5_0", "peer", 1, 0}, 1);
  CommStats sampled({Direction::Recv, "mlx5_0", "peer", 1, 0}, 8);
  int chosen = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    every.completed(10, 0, 1000);
    if (sampled.count(10)) {
      ++chosen;
      sampled.sample(0, 1000);
    }
  }
  CHECK(chosen == 13);  // the first request, then every eighth: 1, 9, ..., 97
  const CommStatsSnapshot e = every.snapshot();
  const CommStatsSnapshot s = sampled.snapshot();
  CHECK(e.messages == 100);
  CHECK(s.messages == 100);
  CHECK(e.bytes == 1000);
  CHECK(s.bytes == 1000);
  CHECK(e.completion.total() == 100);
  CHECK(s.completion.total() == 13);
  CHECK(s.completion.percentile_ns(50) == e.completion.percentile_ns(50));
}

TEST_CASE("a wait that began at time zero is watched like any other") {
  // Zero is also the watch's initial `since`: the first look must still start the schedule
  // (it once doubled a zero threshold forever).
  StallWatch watch(100, 1.0);
  CHECK_FALSE(watch.warn_after(0, 0).has_value());
  CHECK_FALSE(watch.warn_after(0, 99).has_value());
  CHECK(watch.warn_after(0, 100) == 100);
  CHECK_FALSE(watch.warn_after(0, 150).has_value());
  CHECK(watch.warn_after(0, 200) == 200);
}

namespace {

// Nanoseconds in the comms' clock ticks (rdtsc where the CPU allows).
uint64_t ticks(double ns) {
  return static_cast<uint64_t>(ns / ns_per_tick());
}

CommStatsSnapshot sample_send() {
  CommStats stats({Direction::Send, "mlx5_0", "10.0.0.2 \"b\"", 2, 106});
  for (uint64_t i = 1; i <= 100; ++i) {
    stats.completed(4096, 0, ticks(static_cast<double>(i) * 1000));
    stats.cts_waited(i < 99 ? 0 : ticks(50'000));
  }
  stats.failed();
  return stats.snapshot();
}

}  // namespace

TEST_CASE("the close-time summary line names the comm and its figures") {
  const std::string line = summary_line(sample_send());
  CHECK(line.find("send comm to 10.0.0.2 \"b\" on mlx5_0, 2 QPs, tc 106: 100 messages, 409600 B, "
                  "1 errors, 0 stall warnings") == 0);
  // The values themselves are checked through the JSON line below (bucket midpoints).
  CHECK(line.find("; completion p50 ") != std::string::npos);
  CHECK(line.find("clear-to-send wait p50 0.0 us p99 ") != std::string::npos);
}

TEST_CASE("a JSON line carries the comm, its counters, percentiles and buckets") {
  ProcessInfo p{"node1", 4242, "3", 1.5};
  const std::string text = json_line(sample_send(), p);
  REQUIRE(text.back() == '\n');
  const auto j = nlohmann::json::parse(text);
  CHECK(j["host"] == "node1");
  CHECK(j["pid"] == 4242);
  CHECK(j["rank"] == "3");
  CHECK(j["direction"] == "send");
  CHECK(j["peer"] == "10.0.0.2 \"b\"");
  CHECK(j["messages"] == 100);
  CHECK(j["bytes"] == 409600);
  CHECK(j["errors"] == 1);
  CHECK(j["completion_us"]["count"] == 100);
  CHECK(j["completion_us"]["p50"].get<double>() == Approx(50).epsilon(0.13));
  CHECK(j["cts_wait_us"]["p90"].get<double>() == Approx(0).margin(1e-9));
  CHECK(j["cts_wait_us"]["max"].get<double>() == Approx(50).epsilon(0.13));
  uint64_t counted = 0;
  for (const auto& bucket : j["completion_buckets_ns"]) {
    counted += bucket[1].get<uint64_t>();
  }
  CHECK(counted == 100);
  ProcessInfo no_rank{"n", 1, "", 0};
  CHECK(nlohmann::json::parse(json_line(sample_send(), no_rank))["rank"].is_null());
}

TEST_CASE("the Prometheus text has HELP/TYPE per family and escaped labels") {
  ProcessInfo p{"node1", 7, "0", 0};
  const std::string text = prometheus_text({sample_send()}, p);
  CHECK(text.find("# TYPE nccl_roce_comm_messages_total counter\n") != std::string::npos);
  CHECK(text.find("peer=\"10.0.0.2 \\\"b\\\"\"") != std::string::npos);
  CHECK(text.find("} 100\n") != std::string::npos);
  CHECK(text.find("nccl_roce_comm_completion_seconds{") != std::string::npos);
  CHECK(text.find("percentile=\"99\"} 0.0000") != std::string::npos);
  // promtool check metrics: only summaries carry a quantile label.
  CHECK(text.find("quantile") == std::string::npos);
}

TEST_CASE("every Prometheus family is written with its HELP and TYPE, counters end in _total") {
  ProcessInfo p{"node1", 7, "0", 0};
  const std::string text = prometheus_text({sample_send()}, p);
  for (const auto& family : roce::telemetry::kPrometheusFamilies) {
    const std::string name = family.name;
    INFO(name);
    CHECK(name.rfind("nccl_roce_", 0) == 0);
    CHECK((std::string(family.type) == "counter") ==
          (name.size() > 6 && name.substr(name.size() - 6) == "_total"));
    if (name != "nccl_roce_port_increase_total") {  // only with port readings
      CHECK(text.find("# HELP " + name + " ") != std::string::npos);
      CHECK(text.find("# TYPE " + name + " " + family.type + "\n") != std::string::npos);
      CHECK(text.find("\n" + name + "{") != std::string::npos);
    }
  }
}

TEST_CASE("stats file patterns expand %h and %p") {
  CHECK(expand_path("/tmp/roce.%h.%p.jsonl", "node1", 42) == "/tmp/roce.node1.42.jsonl");
  CHECK(expand_path("/tmp/100%%-%x%", "h", 1) == "/tmp/100%-%x%");
}

TEST_CASE("the registry reports live comms and keeps closed ones, bounded") {
  auto& registry = StatsRegistry::instance();
  registry.keep_closed(StatsRegistry::kClosedKept);  // as while the stats file writer runs
  const std::size_t before = registry.snapshot_all().size();
  CommStats a({Direction::Recv, "d", "p", 1, 0});
  registry.add(&a);
  a.completed(8, 0, 10);
  auto all = registry.snapshot_all();
  REQUIRE(all.size() == before + 1);
  const auto last = registry.remove(&a);
  CHECK(last.closed);
  CHECK(last.messages == 1);
  all = registry.snapshot_all();
  CHECK(all.back().closed);
  CHECK(all.back().id == a.id());
  const std::size_t dropped_before = registry.closed_dropped();
  for (std::size_t i = 0; i < StatsRegistry::kClosedKept; ++i) {
    CommStats c({Direction::Send, "d", "p", 1, 0});
    registry.add(&c);
    registry.remove(&c);
  }
  CHECK(registry.closed_kept() == StatsRegistry::kClosedKept);
  CHECK(registry.snapshot_all().size() <= StatsRegistry::kClosedKept);
  CHECK(registry.closed_dropped() > dropped_before);
  // The writer stopped: what it kept goes at once.
  registry.keep_closed(0);
  CHECK(registry.closed_kept() == 0);
  CHECK(registry.snapshot_all().empty());
}

TEST_CASE("without a stats file no closed comm's snapshot is kept") {
  // Issue 49: 2500 connect/close cycles without NCCL_ROCE_STATS_FILE kept 4096 snapshots
  // (about 30 MB) that nothing would ever read.
  auto& registry = StatsRegistry::instance();
  registry.keep_closed(0);
  start_stats_writer({"", 10000, true});  // NCCL_ROCE_STATS=1 alone: summaries, no file
  for (int i = 0; i < 100; ++i) {
    CommStats c({Direction::Send, "d", "p", 1, 0});
    registry.add(&c);
    c.completed(8, 0, 10);
    const auto last = registry.remove(&c);
    CHECK(last.messages == 1);  // the close-time summary still gets its snapshot
  }
  CHECK(registry.closed_kept() == 0);
  CHECK(registry.snapshot_all().empty());
  stop_stats_writer();
}

TEST_CASE("the stats file writer keeps closed comms while it runs and drops them when stopped") {
  auto& registry = StatsRegistry::instance();
  registry.keep_closed(0);
  char dir_template[] = "/tmp/roce-stats-test.XXXXXX";
  const char* dir = mkdtemp(dir_template);
  REQUIRE(dir != nullptr);
  const std::string file = std::string(dir) + "/stats.jsonl";
  start_stats_writer({file, 3600000, false});
  {
    CommStats c({Direction::Recv, "d", "p", 1, 0});
    registry.add(&c);
    registry.remove(&c);
  }
  CHECK(registry.closed_kept() == 1);  // the next write reports it
  stop_stats_writer();                 // writes once more, then keeps nothing
  CHECK(registry.closed_kept() == 0);
  std::ifstream in(file);
  std::string line;
  bool closed_reported = false;
  while (std::getline(in, line)) {
    closed_reported = closed_reported || nlohmann::json::parse(line).value("closed", false);
  }
  CHECK(closed_reported);
  std::remove(file.c_str());
  std::remove((file + ".prom").c_str());
  ::rmdir(dir);
}

TEST_CASE("sends that found their clear-to-send at once count as waits of zero") {
  CommStats stats({Direction::Send, "d", "p", 1, 0});
  for (uint64_t i = 0; i < 100; ++i) {
    stats.completed(8, 0, 1000);
  }
  stats.cts_waited(ticks(2e6));  // two sends waited 2 ms
  stats.cts_waited(ticks(2e6));
  const auto s = stats.snapshot();
  CHECK(s.cts_wait.total() == 100);
  CHECK(s.cts_wait.percentile_ns(50) == 0);
  CHECK(s.cts_wait.percentile_ns(99) == Approx(2'000'000).epsilon(0.13));
  CommStats recv({Direction::Recv, "d", "p", 1, 0});
  recv.completed(8, 0, 1000);
  CHECK(recv.snapshot().cts_wait.total() == 0);  // receives have no clear-to-send wait
}

TEST_CASE("the request clock ticks forward and its calibration converts to time") {
  const double scale = ns_per_tick();
  REQUIRE(scale > 0);
  const uint64_t t0 = now_ticks();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const uint64_t t1 = now_ticks();
  REQUIRE(t1 > t0);
  // A sleep lasts at least as long as asked (no upper bound: the machine may be loaded).
  CHECK(static_cast<double>(t1 - t0) * scale >= 9.5e6);
  CHECK(ms_from_ticks(ticks_from_ms(250)) >= 249);
  CHECK(ms_from_ticks(ticks_from_ms(250)) <= 250);
}
