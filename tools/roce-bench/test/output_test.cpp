// JSON rendering, the NCCL_DEBUG filter and the plugin/raw comparison.
#include <catch2/catch.hpp>
#include <limits>

#include "json_writer.h"
#include "nccl_logger.h"
#include "report.h"
#include "result_checks.h"

using namespace roce::bench;
using roce::tools::JsonWriter;

TEST_CASE("JSON strings are escaped and containers separated") {
  JsonWriter j;
  j.begin_object();
  j.key("a\"b").value("line\nnext\t\\ \x01");
  j.key("list").begin_array().value(1).value(2.5).value(true).null().end_array();
  j.key("nan").value(std::numeric_limits<double>::quiet_NaN());
  j.key("empty").begin_object().end_object();
  j.end_object();
  CHECK(j.str() ==
        R"({"a\"b":"line\nnext\t\\ \u0001","list":[1,2.5,true,null],"nan":null,"empty":{}})");
}

TEST_CASE(
    "JSON output survives invalid UTF-8 (replaced by U+FFFD) and rounds figures to 6 digits") {
  JsonWriter j;
  j.begin_array().value("dev\xff").value(1.0 / 3.0).value(std::uint64_t{1} << 63).end_array();
  CHECK(j.str() == "[\"dev\xEF\xBF\xBD\",0.333333,9223372036854775808]");
  CHECK(roce::tools::json_string("a\"b") == "\"a\\\"b\"");
}

TEST_CASE("NCCL_DEBUG and NCCL_DEBUG_SUBSYS are read with NCCL's meaning") {
  auto f = parse_log_filter(nullptr, nullptr);
  REQUIRE(f);
  CHECK(f->level == NCCL_LOG_WARN);
  CHECK(f->subsys_mask == (NCCL_INIT | NCCL_BOOTSTRAP | NCCL_ENV));
  f = parse_log_filter("info", "NET,init");
  REQUIRE(f);
  CHECK(f->level == NCCL_LOG_INFO);
  CHECK(f->subsys_mask == (NCCL_NET | NCCL_INIT));
  f = parse_log_filter("TRACE", "^NET");
  REQUIRE(f);
  CHECK((f->subsys_mask & NCCL_NET) == 0);
  CHECK((f->subsys_mask & NCCL_INIT) != 0);
  CHECK(roce::test::failure_of(parse_log_filter("LOUD", nullptr)).find("NCCL_DEBUG=LOUD") !=
        std::string::npos);
  CHECK(roce::test::failure_of(parse_log_filter("INFO", "NET,DISK")).find("DISK") !=
        std::string::npos);
}

TEST_CASE("the logger keeps every record, printed or not") {
  configure_logger(LogFilter{NCCL_LOG_NONE, 0}, 3);
  const auto before = logged_records().size();
  roce_bench_nccl_logger(NCCL_LOG_INFO, NCCL_NET, "f.cpp", 1, "dev %s gid %d", "vroce0", 3);
  roce_bench_nccl_logger(NCCL_LOG_WARN, NCCL_INIT, "f.cpp", 2, "%s", "trouble");
  const auto records = logged_records();
  REQUIRE(records.size() == before + 2);
  CHECK(records[before].text == "dev vroce0 gid 3");
  CHECK(records[before + 1].level == NCCL_LOG_WARN);
  CHECK(logged_warnings() >= 1);
}

TEST_CASE("plugin/raw ratios: latency for pingpong, algbw for bandwidth") {
  Series plugin{"plugin", {}};
  Series raw{"raw verbs", {}};
  Row p;
  p.bytes = 8;
  p.time_us = 12;
  p.algbw = 1;
  Row r = p;
  r.time_us = 10;
  r.algbw = 2;
  plugin.rows.push_back(p);
  raw.rows.push_back(r);
  const auto lat = compare(Mode::PingPong, plugin, raw);
  REQUIRE(lat.size() == 1);
  CHECK(lat[0].ratio == Approx(1.2));
  const auto bw = compare(Mode::Bandwidth, plugin, raw);
  CHECK(bw[0].ratio == Approx(0.5));
  CHECK(total_wrong({plugin, raw}) == 0);
}
