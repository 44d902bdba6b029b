// The settings registry: defaults, NCCL's meaning for NCCL_IB_*, traffic-class precedence, and
// init errors that name the variable, the value and the accepted range.
#include "util/config.h"

#include <catch2/catch.hpp>
#include <cstdarg>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "util/log.h"

namespace {

using Env = std::map<std::string, std::string, std::less<>>;

std::optional<std::string> lookup(std::string_view name, void* user) {
  const Env& env = *static_cast<const Env*>(user);
  const auto it = env.find(name);
  if (it == env.end()) {
    return std::nullopt;
  }
  return it->second;
}

roce::Config parse(Env env) {
  roce::Result<roce::Config> config = roce::parse_config(&lookup, &env);
  INFO((config ? std::string() : config.error()));
  REQUIRE(config.has_value());
  return *config;
}

std::string error_of(Env env) {
  const roce::Result<roce::Config> config = roce::parse_config(&lookup, &env);
  REQUIRE_FALSE(config.has_value());
  CHECK_FALSE(config.error().empty());
  return config.error();
}

bool has_note(const roce::Config& config, std::string_view text) {
  for (const std::string& note : config.notes) {
    if (note.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("an empty environment gives NCCL's defaults and no traffic class", "[config]") {
  const roce::Config config = parse({});
  CHECK(config == roce::Config{});
  CHECK_FALSE(config.traffic_class.has_value());
  CHECK(config.traffic_class_source == roce::TrafficClassSource::Default);
  CHECK(config.gid_index == -1);
  CHECK(config.addr_family == roce::AddressFamily::Ipv4);
  CHECK(config.roce_version == 2);
  CHECK(config.ib_timeout == 20);
  CHECK(config.retry_count == 7);
  CHECK(config.qps_per_connection == 1);
  CHECK(config.use_inline);
  CHECK(config.pci_relaxed_ordering == 2);
  CHECK(config.sysfs_root == "/sys");
  CHECK(config.connect_timeout_ms == 30000);
  CHECK(config.notes.empty());
}

TEST_CASE("NCCL_ROCE_TC wins over NCCL_ROCE_DSCP and NCCL_IB_TC", "[config][tc]") {
  const roce::Config config =
      parse({{"NCCL_ROCE_TC", "106"}, {"NCCL_ROCE_DSCP", "26"}, {"NCCL_IB_TC", "96"}});
  CHECK(config.traffic_class == 106);
  CHECK(config.traffic_class_source == roce::TrafficClassSource::NcclRoceTc);
  CHECK(has_note(config, "NCCL_IB_TC=96 is overridden by NCCL_ROCE_TC"));
}

TEST_CASE("NCCL_ROCE_DSCP=26 means traffic class 104 and wins over NCCL_IB_TC", "[config][tc]") {
  const roce::Config config = parse({{"NCCL_ROCE_DSCP", "26"}, {"NCCL_IB_TC", "96"}});
  CHECK(config.traffic_class == 104);
  CHECK(config.traffic_class_source == roce::TrafficClassSource::NcclRoceDscp);
  CHECK(parse({{"NCCL_ROCE_DSCP", "0"}}).traffic_class == 0);
  CHECK(parse({{"NCCL_ROCE_DSCP", "63"}}).traffic_class == 252);
}

TEST_CASE("NCCL_IB_TC applies when neither NCCL_ROCE_TC nor NCCL_ROCE_DSCP is set",
          "[config][tc]") {
  const roce::Config config = parse({{"NCCL_IB_TC", "0x68"}});
  CHECK(config.traffic_class == 104);
  CHECK(config.traffic_class_source == roce::TrafficClassSource::NcclIbTc);
  CHECK(has_note(config, "NCCL_IB_TC set by environment to 0x68"));
  CHECK_FALSE(parse({{"NCCL_IB_TC", "-1"}}).traffic_class.has_value());
}

TEST_CASE("NCCL_ROCE_TC and NCCL_ROCE_DSCP naming different classes is an error", "[config][tc]") {
  CHECK(error_of({{"NCCL_ROCE_TC", "96"}, {"NCCL_ROCE_DSCP", "26"}}) ==
        "NCCL_ROCE_TC=96 (dscp 24) and NCCL_ROCE_DSCP=26 (tc 104) name different traffic "
        "classes; set only one of them (NCCL_ROCE_TC wins when both name the same DSCP)");
  // Same DSCP, ECN bits only in NCCL_ROCE_TC: consistent, and the fuller value wins.
  CHECK(parse({{"NCCL_ROCE_TC", "104"}, {"NCCL_ROCE_DSCP", "26"}}).traffic_class == 104);
}

TEST_CASE("a traffic class out of range is an error naming variable, value and range",
          "[config][tc]") {
  CHECK(error_of({{"NCCL_ROCE_TC", "256"}}) ==
        "NCCL_ROCE_TC=256 is out of range; accepted: 0..255 (default unset); fix or unset it");
  CHECK_THAT(error_of({{"NCCL_ROCE_DSCP", "64"}}),
             Catch::StartsWith("NCCL_ROCE_DSCP=64 is out of range; accepted: 0..63"));
  CHECK_THAT(error_of({{"NCCL_IB_TC", "-2"}}),
             Catch::StartsWith("NCCL_IB_TC=-2 is out of range; accepted: 0..255, or -1"));
  CHECK_THAT(error_of({{"NCCL_ROCE_TC", "-1"}}), Catch::StartsWith("NCCL_ROCE_TC=-1 is out"));
  CHECK_THAT(error_of({{"NCCL_IB_SL", "16"}}),
             Catch::StartsWith("NCCL_IB_SL=16 is out of range; accepted: 0..15"));
}

TEST_CASE("malformed numbers are errors, and a leading zero is not read as octal", "[config]") {
  CHECK(error_of({{"NCCL_IB_TIMEOUT", "abc"}}) ==
        "NCCL_IB_TIMEOUT=abc is not an integer; accepted: 0..31 (default 20); fix or unset it");
  CHECK_THAT(error_of({{"NCCL_IB_TIMEOUT", "12ms"}}), Catch::Contains("is not an integer"));
  CHECK_THAT(error_of({{"NCCL_IB_TC", "026"}}),
             Catch::Contains("NCCL_IB_TC=026 has a leading zero (NCCL would read it as octal)"));
  CHECK_THAT(error_of({{"NCCL_IB_TC", "0x"}}), Catch::Contains("is not an integer"));
  CHECK_THAT(error_of({{"NCCL_IB_TC", "99999999999999999999999"}}),
             Catch::Contains("is not an integer"));
  CHECK(parse({{"NCCL_IB_TIMEOUT", " 22 "}}).ib_timeout == 22);
}

TEST_CASE("the net_ib settings the plugin now applies are parsed, with NCCL's defaults",
          "[config]") {
  const roce::Config defaults = parse({});
  CHECK_FALSE(defaults.split_data_on_qps);
  CHECK(defaults.device_pci_order);
  CHECK(defaults.query_port_speed);
  CHECK_FALSE(defaults.mqp_retry_all);
  CHECK(defaults.mqp_retry_count == 34);
  CHECK(defaults.mqp_retry_sleep_ms == 100);
  const roce::Config set = parse({{"NCCL_IB_SPLIT_DATA_ON_QPS", "1"},
                                  {"NCCL_IB_DEVICE_PCI_ORDER", "0"},
                                  {"NCCL_IB_QUERY_PORT_SPEED", "0"},
                                  {"NCCL_IB_MQP_RETRY_ALL", "1"},
                                  {"NCCL_IB_MQP_RETRY_CNT", "5"},
                                  {"NCCL_IB_MQP_RETRY_SLEEP_MSEC", "7"}});
  CHECK(set.split_data_on_qps);
  CHECK_FALSE(set.device_pci_order);
  CHECK_FALSE(set.query_port_speed);
  CHECK(set.mqp_retry_all);
  CHECK(set.mqp_retry_count == 5);
  CHECK(set.mqp_retry_sleep_ms == 7);
  CHECK(set.notes.size() == 6);  // each found setting logged, none "not applied"
}

TEST_CASE("NCCL's ranges are accepted: NCCL_IB_TIMEOUT=0, 128 QPs per connection", "[config]") {
  CHECK(parse({{"NCCL_IB_TIMEOUT", "0"}}).ib_timeout == 0);
  CHECK(parse({{"NCCL_IB_QPS_PER_CONNECTION", "128"}}).qps_per_connection == 128);
}

TEST_CASE("every integer setting rejects values outside its range", "[config]") {
  CHECK_THAT(error_of({{"NCCL_IB_TIMEOUT", "32"}}), Catch::Contains("accepted: 0..31"));
  CHECK_THAT(error_of({{"NCCL_IB_RETRY_CNT", "8"}}), Catch::Contains("accepted: 0..7"));
  CHECK_THAT(error_of({{"NCCL_IB_QPS_PER_CONNECTION", "0"}}), Catch::Contains("1..128"));
  CHECK_THAT(error_of({{"NCCL_IB_QPS_PER_CONNECTION", "129"}}), Catch::Contains("1..128"));
  CHECK_THAT(error_of({{"NCCL_IB_GID_INDEX", "256"}}), Catch::Contains("0..255"));
  CHECK_THAT(error_of({{"NCCL_IB_GID_INDEX", "-2"}}), Catch::Contains("0..255"));
  CHECK_THAT(error_of({{"NCCL_IB_PKEY", "65536"}}), Catch::Contains("0..65535"));
  CHECK_THAT(error_of({{"NCCL_IB_PCI_RELAXED_ORDERING", "3"}}), Catch::Contains("0, 1, 2"));
  CHECK_THAT(error_of({{"NCCL_ROCE_CONNECT_TIMEOUT_MS", "5"}}), Catch::Contains("10..3600000"));
  CHECK_THAT(error_of({{"NCCL_IB_FIFO_TC", "300"}}), Catch::Contains("NCCL_IB_FIFO_TC=300"));
}

TEST_CASE("NCCL_IB_* integer settings keep NCCL's meaning", "[config]") {
  const roce::Config config = parse({{"NCCL_IB_GID_INDEX", "3"},
                                     {"NCCL_IB_TIMEOUT", "22"},
                                     {"NCCL_IB_RETRY_CNT", "5"},
                                     {"NCCL_IB_QPS_PER_CONNECTION", "4"},
                                     {"NCCL_IB_PKEY", "0"},
                                     {"NCCL_IB_SL", "3"},
                                     {"NCCL_IB_PCI_RELAXED_ORDERING", "0"},
                                     {"NCCL_GDR_FLUSH_DISABLE", "1"}});
  CHECK(config.gid_index == 3);
  CHECK(config.ib_timeout == 22);
  CHECK(config.retry_count == 5);
  CHECK(config.qps_per_connection == 4);
  CHECK(config.service_level == 3);
  CHECK(config.pci_relaxed_ordering == 0);
  CHECK(config.gdr_flush_disable);
  CHECK(parse({{"NCCL_IB_GID_INDEX", "-1"}}).gid_index == -1);
  CHECK_FALSE(parse({{"NCCL_IB_SL", "-1"}}).service_level.has_value());
}

TEST_CASE("booleans accept 0/1 and words, and reject anything else", "[config]") {
  CHECK(parse({{"NCCL_ROCE_REQUIRE_GDR", "1"}}).require_gdr);
  CHECK(parse({{"NCCL_ROCE_REQUIRE_GDR", "TRUE"}}).require_gdr);
  CHECK_FALSE(parse({{"NCCL_ROCE_DMABUF", "off"}}).dmabuf_enable);
  CHECK(error_of({{"NCCL_ROCE_REQUIRE_GDR", "2"}}) ==
        "NCCL_ROCE_REQUIRE_GDR=2 is not a boolean; accepted: 0, 1 (default 0); fix or unset it");
}

TEST_CASE("NCCL_ROCE_INLINE wins over NCCL_IB_USE_INLINE, which applies when it is unset",
          "[config]") {
  CHECK_FALSE(parse({{"NCCL_IB_USE_INLINE", "0"}}).use_inline);
  CHECK(parse({{"NCCL_IB_USE_INLINE", "0"}, {"NCCL_ROCE_INLINE", "1"}}).use_inline);
  CHECK_FALSE(parse({{"NCCL_IB_USE_INLINE", "1"}, {"NCCL_ROCE_INLINE", "0"}}).use_inline);
}

TEST_CASE("an empty value counts as unset", "[config]") {
  CHECK(parse({{"NCCL_IB_TC", ""}, {"NCCL_IB_HCA", "  "}}) == roce::Config{});
}

TEST_CASE("NCCL_IB_ADDR_FAMILY takes AF_INET or AF_INET6 only", "[config][gid]") {
  CHECK(parse({{"NCCL_IB_ADDR_FAMILY", "AF_INET6"}}).addr_family == roce::AddressFamily::Ipv6);
  CHECK(parse({{"NCCL_IB_ADDR_FAMILY", "AF_INET"}}).addr_family == roce::AddressFamily::Ipv4);
  CHECK(error_of({{"NCCL_IB_ADDR_FAMILY", "inet6"}}) ==
        "NCCL_IB_ADDR_FAMILY=inet6 is not a family; accepted: AF_INET, AF_INET6 (default "
        "AF_INET); fix or unset it");
}

TEST_CASE("NCCL_IB_ADDR_RANGE must be a CIDR of the chosen family", "[config][gid]") {
  CHECK(parse({{"NCCL_IB_ADDR_RANGE", "10.0.0.0/8"}}).addr_range == "10.0.0.0/8");
  CHECK(
      parse({{"NCCL_IB_ADDR_FAMILY", "AF_INET6"}, {"NCCL_IB_ADDR_RANGE", "fd00::/8"}}).addr_range ==
      "fd00::/8");
  CHECK_THAT(error_of({{"NCCL_IB_ADDR_RANGE", "10.0.0.0"}}),
             Catch::StartsWith("NCCL_IB_ADDR_RANGE=10.0.0.0 is malformed: expected "
                               "address/prefix-length"));
  CHECK_THAT(error_of({{"NCCL_IB_ADDR_RANGE", "10.0.0.0/33"}}),
             Catch::Contains("must be a number in 0..32"));
  CHECK_THAT(error_of({{"NCCL_IB_ADDR_RANGE", "10.0.0.300/8"}}),
             Catch::Contains("'10.0.0.300' is not an IPv4 or IPv6 address"));
  CHECK_THAT(error_of({{"NCCL_IB_ADDR_RANGE", "fd00::/8"}}),
             Catch::Contains("is an IPv6 range but NCCL_IB_ADDR_FAMILY is AF_INET") &&
                 Catch::Contains("set NCCL_IB_ADDR_FAMILY=AF_INET6"));
}

TEST_CASE("NCCL_IB_ROCE_VERSION_NUM=1 is refused with a hint", "[config][gid]") {
  CHECK_THAT(error_of({{"NCCL_IB_ROCE_VERSION_NUM", "1"}}),
             Catch::StartsWith("NCCL_IB_ROCE_VERSION_NUM=1 asks for RoCE v1, which is not "
                               "routable") &&
                 Catch::Contains("unset it or set 2"));
  CHECK(parse({{"NCCL_IB_ROCE_VERSION_NUM", "2"}}).roce_version == 2);
  CHECK_THAT(error_of({{"NCCL_IB_ROCE_VERSION_NUM", "3"}}), Catch::Contains("accepted: 2"));
}

TEST_CASE("NCCL_IB_FIFO_TC is its own class, independent of the traffic class", "[config][tc]") {
  CHECK(parse({{"NCCL_IB_TC", "104"}, {"NCCL_IB_FIFO_TC", "104"}}).fifo_traffic_class == 104);
  const roce::Config both = parse({{"NCCL_IB_TC", "104"}, {"NCCL_IB_FIFO_TC", "184"}});
  CHECK(both.traffic_class == 104);
  CHECK(both.fifo_traffic_class == 184);
  CHECK(parse({{"NCCL_IB_FIFO_TC", "96"}}).fifo_traffic_class == 96);
  CHECK_FALSE(parse({{"NCCL_IB_FIFO_TC", "-1"}}).fifo_traffic_class.has_value());
  CHECK_FALSE(parse({}).fifo_traffic_class.has_value());
}

TEST_CASE("recognised NCCL settings that are not applied are reported with what happens instead",
          "[config]") {
  const roce::Config config =
      parse({{"NCCL_IB_DATA_DIRECT", "0"}, {"NCCL_IB_WARN_RAIL_LOCAL", "0"}});
  CHECK(has_note(config, "NCCL_IB_DATA_DIRECT=0: Ignored: mlx5 Data-Direct is not used"));
  CHECK(has_note(config, "NCCL_IB_WARN_RAIL_LOCAL=0: Ignored"));
  CHECK(config.notes.size() == 2);
}

TEST_CASE("NCCL_IB_MERGE_NICS and NCCL_IB_MERGE_VFS are applied, on by default as in net_ib",
          "[config]") {
  const roce::Config defaults = parse({});
  CHECK(defaults.merge_nics);
  CHECK(defaults.merge_vfs);
  const roce::Config off = parse({{"NCCL_IB_MERGE_NICS", "0"}, {"NCCL_IB_MERGE_VFS", "0"}});
  CHECK_FALSE(off.merge_nics);
  CHECK_FALSE(off.merge_vfs);
  // Applied settings, not "recognised but ignored" ones.
  CHECK_FALSE(has_note(off, "NCCL_IB_MERGE_NICS=0: Ignored"));
  CHECK_FALSE(has_note(off, "NCCL_IB_MERGE_VFS=0: Ignored"));
}

TEST_CASE("ECE and adaptive routing take NCCL's settings and defaults", "[config]") {
  const roce::Config defaults = parse({});
  CHECK(defaults.ece_enable);
  CHECK_FALSE(defaults.adaptive_routing);  // net_ib's default on RoCE
  CHECK(defaults.ar_threshold == 8192);
  const roce::Config set = parse({{"NCCL_IB_ECE_ENABLE", "0"},
                                  {"NCCL_IB_ADAPTIVE_ROUTING", "1"},
                                  {"NCCL_IB_AR_THRESHOLD", "65536"}});
  CHECK_FALSE(set.ece_enable);
  CHECK(set.adaptive_routing);
  CHECK(set.ar_threshold == 65536);
  CHECK_THAT(error_of({{"NCCL_IB_AR_THRESHOLD", "-5"}}), Catch::Contains("NCCL_IB_AR_THRESHOLD"));
  CHECK_THAT(error_of({{"NCCL_IB_ADAPTIVE_ROUTING", "2"}}),
             Catch::Contains("NCCL_IB_ADAPTIVE_ROUTING"));
}

TEST_CASE("plumbing settings are taken as given, the sysfs root must be absolute", "[config]") {
  const roce::Config config = parse({{"NCCL_IBVERBS_LIB", "/opt/vroce/libibverbs.so.1"},
                                     {"NCCL_ROCE_SYSFS_ROOT", "/tmp/pb-sysfs"},
                                     {"NCCL_ROCE_CONNECT_TIMEOUT_MS", "500"},
                                     {"NCCL_SOCKET_IFNAME", "=eth0"},
                                     {"NCCL_IB_HCA", "^mlx5_1"}});
  CHECK(config.ibverbs_lib == "/opt/vroce/libibverbs.so.1");
  CHECK(config.sysfs_root == "/tmp/pb-sysfs");
  CHECK(config.connect_timeout_ms == 500);
  CHECK(config.socket_ifname == "=eth0");
  CHECK(has_note(config, "NCCL_SOCKET_IFNAME set by environment to =eth0"));
  CHECK(config.ib_hca == "^mlx5_1");
  CHECK_THAT(error_of({{"NCCL_ROCE_SYSFS_ROOT", "sys"}}),
             Catch::StartsWith("NCCL_ROCE_SYSFS_ROOT=sys is not an absolute path"));
}

TEST_CASE("the registry lists every setting once, each with a range and a description",
          "[config]") {
  std::set<std::string_view> names;
  for (const roce::SettingInfo& info : roce::settings()) {
    INFO(info.name);
    CHECK(names.insert(info.name).second);
    CHECK(info.name.starts_with("NCCL_"));
    CHECK_FALSE(info.description.empty());
    if (info.applied) {
      CHECK_FALSE(info.range_text.empty());
      CHECK_FALSE(info.default_text.empty());
      CHECK_FALSE(info.type_text.empty());
    }
  }
  for (const char* name : {"NCCL_ROCE_TC",
                           "NCCL_ROCE_DSCP",
                           "NCCL_IB_TC",
                           "NCCL_IB_SL",
                           "NCCL_IB_HCA",
                           "NCCL_IB_GID_INDEX",
                           "NCCL_IB_ADDR_FAMILY",
                           "NCCL_IB_ADDR_RANGE",
                           "NCCL_IB_ROCE_VERSION_NUM",
                           "NCCL_IB_TIMEOUT",
                           "NCCL_IB_RETRY_CNT",
                           "NCCL_IB_QPS_PER_CONNECTION",
                           "NCCL_IB_PKEY",
                           "NCCL_ROCE_INLINE",
                           "NCCL_ROCE_REQUIRE_GDR",
                           "NCCL_GDR_FLUSH_DISABLE",
                           "NCCL_IB_PCI_RELAXED_ORDERING",
                           "NCCL_ROCE_DMABUF",
                           "NCCL_IBVERBS_LIB",
                           "NCCL_ROCE_SYSFS_ROOT",
                           "NCCL_ROCE_CONNECT_TIMEOUT_MS",
                           "NCCL_SOCKET_IFNAME",
                           "NCCL_IB_FIFO_TC",
                           "NCCL_IB_ADAPTIVE_ROUTING",
                           "NCCL_IB_ECE_ENABLE",
                           "NCCL_IB_SPLIT_DATA_ON_QPS",
                           "NCCL_IB_MERGE_NICS"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
}

TEST_CASE("load_config publishes the environment's settings and refuses invalid ones", "[config]") {
  setenv("NCCL_ROCE_DSCP", "26", 1);
  REQUIRE(roce::load_config());
  const roce::Config& first = roce::config();
  CHECK(first.traffic_class == 104);

  setenv("NCCL_ROCE_DSCP", "99", 1);
  const roce::Status refused = roce::load_config();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().find("NCCL_ROCE_DSCP=99 is out of range") != std::string::npos);
  // A failed load leaves the configuration in force untouched.
  CHECK(&roce::config() == &first);
  CHECK(roce::config().traffic_class == 104);

  unsetenv("NCCL_ROCE_DSCP");
  REQUIRE(roce::load_config());
  CHECK_FALSE(roce::config().traffic_class.has_value());
  // The earlier configuration stays valid for threads still holding it.
  CHECK(first.traffic_class == 104);
}

namespace {

std::vector<std::string> g_logged;

void capture_logger(ncclDebugLogLevel /*level*/, unsigned long /*flags*/, const char* /*file*/,
                    int /*line*/, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  g_logged.emplace_back(va_arg(args, const char*));
  va_end(args);
}

}  // namespace

TEST_CASE("load_config reports the settings at INFO once, not again for the same settings",
          "[config]") {
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "ENV", 1);
  roce::log::set_nccl_logger(&capture_logger);
  setenv("NCCL_IB_TIMEOUT", "22", 1);
  REQUIRE(roce::load_config());
  REQUIRE(roce::load_config());
  CHECK(g_logged == std::vector<std::string>{"NET/RoCE NCCL_IB_TIMEOUT set by environment to 22"});
  setenv("NCCL_IB_TIMEOUT", "23", 1);
  REQUIRE(roce::load_config());
  CHECK(g_logged.size() == 2);
  CHECK(g_logged.back() == "NET/RoCE NCCL_IB_TIMEOUT set by environment to 23");
  roce::log::set_nccl_logger(nullptr);
  unsetenv("NCCL_IB_TIMEOUT");
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_SUBSYS");
}

TEST_CASE("telemetry settings: defaults, values and range errors", "[config]") {
  const roce::Config defaults = parse({});
  CHECK_FALSE(defaults.stats_summary);
  CHECK(defaults.stats_file.empty());
  CHECK(defaults.stats_interval_ms == 10000);
  CHECK(defaults.stall_warn_ms == 5000);
  CHECK(defaults.stats_sample == 8);
  const roce::Config set = parse({{"NCCL_ROCE_STATS", "1"},
                                  {"NCCL_ROCE_STATS_SAMPLE", "1"},
                                  {"NCCL_ROCE_STATS_FILE", "/tmp/roce.%h.%p.jsonl"},
                                  {"NCCL_ROCE_STATS_INTERVAL_MS", "250"},
                                  {"NCCL_ROCE_STALL_WARN_MS", "0"}});
  CHECK(set.stats_summary);
  CHECK(set.stats_file == "/tmp/roce.%h.%p.jsonl");
  CHECK(set.stats_interval_ms == 250);
  CHECK(set.stall_warn_ms == 0);
  CHECK(set.stats_sample == 1);
  CHECK(error_of({{"NCCL_ROCE_STATS_SAMPLE", "0"}}).find("NCCL_ROCE_STATS_SAMPLE=0") !=
        std::string::npos);
  CHECK(error_of({{"NCCL_ROCE_STATS_INTERVAL_MS", "10"}}).find("NCCL_ROCE_STATS_INTERVAL_MS=10") !=
        std::string::npos);
  CHECK(error_of({{"NCCL_ROCE_STALL_WARN_MS", "soon"}}).find("NCCL_ROCE_STALL_WARN_MS") !=
        std::string::npos);
}
