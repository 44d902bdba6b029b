// Parsing and validation of the settings in util/config_registry.cpp into a Config, and the
// process-wide configuration in force.
#include "util/config.h"

#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "util/cidr.h"
#include "util/config_registry.h"
#include "util/log.h"
#include "util/text.h"

namespace roce {
namespace {

using config_detail::Kind;
using config_detail::Setting;

const Setting& find_setting(std::string_view name) {
  for (const Setting& setting : config_detail::registry()) {
    if (setting.info.name == name) {
      return setting;
    }
  }
  // Only reachable through a typo in this file; the registry test covers every name used.
  std::abort();
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Decimal or 0x-prefixed hexadecimal. NCCL parses with strtoll(base 0), which reads "026" as
// octal 22; rather than guess, a leading zero is refused.
Result<long long> parse_integer(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0' &&
             std::isdigit(static_cast<unsigned char>(text[1])) != 0) {
    return failure("has a leading zero (NCCL would read it as octal); write it in decimal");
  }
  unsigned long long magnitude = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, magnitude, base);
  if (text.empty() || ec != std::errc() || ptr != end || magnitude > (1ULL << 62)) {
    return failure("is not an integer");
  }
  const auto value = static_cast<long long>(magnitude);
  return negative ? -value : value;
}

std::optional<bool> parse_boolean(std::string_view text) {
  const std::string value = lower(text);
  if (value == "1" || value == "true" || value == "yes" || value == "on") {
    return true;
  }
  if (value == "0" || value == "false" || value == "no" || value == "off") {
    return false;
  }
  return std::nullopt;
}

// Reads the registry's settings through the lookup function, one typed accessor per kind.
class Reader {
 public:
  Reader(EnvLookup lookup, void* user, std::vector<std::string>* notes)
      : lookup_(lookup), user_(user), notes_(notes) {}

  const std::string& error() const { return error_; }

  // The raw text when set and not blank. An empty value counts as unset, as `export X=` is how
  // job scripts commonly clear a variable.
  std::optional<std::string> text(std::string_view name) {
    std::optional<std::string> value = raw(name);
    if (value) {
      notes_->push_back(std::string(name) + " set by environment to " + *value);
    }
    return value;
  }

  // As text(), without the "set by environment" note.
  std::optional<std::string> raw(std::string_view name) {
    std::optional<std::string> value = lookup_(name, user_);
    if (!value) {
      return std::nullopt;
    }
    const std::string_view trimmed = trim(*value);
    if (trimmed.empty()) {
      return std::nullopt;
    }
    return std::string(trimmed);
  }

  // Returns false after setting error_; *out stays nullopt when unset.
  bool integer(std::string_view name, std::optional<int>* out) {
    const Setting& setting = find_setting(name);
    const std::optional<std::string> value = text(name);
    if (!value) {
      return true;
    }
    const Result<long long> number = parse_integer(*value);
    if (!number) {
      return fail(setting, *value, number.error());
    }
    if (setting.minus_one_is_unset && *number == -1) {
      return true;
    }
    if (*number < setting.min || *number > setting.max) {
      return fail(setting, *value, "is out of range");
    }
    *out = static_cast<int>(*number);
    return true;
  }

  bool boolean(std::string_view name, std::optional<bool>* out) {
    const Setting& setting = find_setting(name);
    const std::optional<std::string> value = text(name);
    if (!value) {
      return true;
    }
    *out = parse_boolean(*value);
    if (!*out) {
      return fail(setting, *value, "is not a boolean");
    }
    return true;
  }

  bool fail(const Setting& setting, std::string_view value, std::string_view reason) {
    error_ = std::string(setting.info.name) + "=" + std::string(value) + " " + std::string(reason) +
             "; accepted: " + std::string(setting.info.range_text) + " (default " +
             std::string(setting.info.default_text) + "); fix or unset it";
    return false;
  }

  bool fail_with(std::string message) {
    error_ = std::move(message);
    return false;
  }

 private:
  EnvLookup lookup_;
  void* user_;
  std::vector<std::string>* notes_;
  std::string error_;
};

template <typename T>
void assign(const std::optional<T>& value, T* field) {
  if (value) {
    *field = *value;
  }
}

bool read_traffic_class(Reader& reader, Config* config) {
  std::optional<int> roce_tc;
  std::optional<int> roce_dscp;
  std::optional<int> ib_tc;
  if (!reader.integer("NCCL_ROCE_TC", &roce_tc) || !reader.integer("NCCL_ROCE_DSCP", &roce_dscp) ||
      !reader.integer("NCCL_IB_TC", &ib_tc) ||
      !reader.integer("NCCL_IB_SL", &config->service_level) ||
      !reader.integer("NCCL_IB_FIFO_TC", &config->fifo_traffic_class)) {
    return false;
  }
  if (roce_tc && roce_dscp && (*roce_tc >> 2) != *roce_dscp) {
    return reader.fail_with(
        "NCCL_ROCE_TC=" + std::to_string(*roce_tc) + " (dscp " + std::to_string(*roce_tc >> 2) +
        ") and NCCL_ROCE_DSCP=" + std::to_string(*roce_dscp) + " (tc " +
        std::to_string(*roce_dscp << 2) +
        ") name different traffic classes; set only one of them (NCCL_ROCE_TC wins when both "
        "name the same DSCP)");
  }
  if (roce_tc) {
    config->traffic_class = roce_tc;
    config->traffic_class_source = TrafficClassSource::NcclRoceTc;
  } else if (roce_dscp) {
    config->traffic_class = *roce_dscp << 2;
    config->traffic_class_source = TrafficClassSource::NcclRoceDscp;
  } else if (ib_tc) {
    config->traffic_class = ib_tc;
    config->traffic_class_source = TrafficClassSource::NcclIbTc;
  }
  if (ib_tc && (roce_tc || roce_dscp) && *ib_tc != *config->traffic_class) {
    config->notes.push_back("NCCL_IB_TC=" + std::to_string(*ib_tc) + " is overridden by " +
                            (roce_tc ? "NCCL_ROCE_TC" : "NCCL_ROCE_DSCP") + ": traffic class " +
                            std::to_string(*config->traffic_class) + " applies");
  }
  return true;
}

bool read_gid_selection(Reader& reader, Config* config) {
  if (const auto family = reader.text("NCCL_IB_ADDR_FAMILY")) {
    if (*family == "AF_INET") {
      config->addr_family = AddressFamily::Ipv4;
    } else if (*family == "AF_INET6") {
      config->addr_family = AddressFamily::Ipv6;
    } else {
      return reader.fail(find_setting("NCCL_IB_ADDR_FAMILY"), *family, "is not a family");
    }
  }
  if (const auto range = reader.text("NCCL_IB_ADDR_RANGE")) {
    const Result<Cidr> cidr = parse_cidr(*range);
    if (!cidr) {
      return reader.fail(find_setting("NCCL_IB_ADDR_RANGE"), *range,
                         "is malformed: " + cidr.error());
    }
    if (cidr->family != config->addr_family) {
      const bool v4 = cidr->family == AddressFamily::Ipv4;
      return reader.fail_with("NCCL_IB_ADDR_RANGE=" + *range + " is an " + (v4 ? "IPv4" : "IPv6") +
                              " range but NCCL_IB_ADDR_FAMILY is " + (v4 ? "AF_INET6" : "AF_INET") +
                              ", so no GID could match; set " + "NCCL_IB_ADDR_FAMILY=" +
                              (v4 ? "AF_INET" : "AF_INET6") + " or give a range of that family");
    }
    config->addr_range = *range;
  }
  std::optional<int> gid_index;
  std::optional<int> roce_version;
  if (!reader.integer("NCCL_IB_GID_INDEX", &gid_index)) {
    return false;
  }
  config->gid_index = gid_index.value_or(-1);
  if (!reader.integer("NCCL_IB_ROCE_VERSION_NUM", &roce_version)) {
    return false;
  }
  if (roce_version == 1) {
    return reader.fail_with(
        "NCCL_IB_ROCE_VERSION_NUM=1 asks for RoCE v1, which is not routable (no IP/UDP header, "
        "so it cannot cross a router and carries no DSCP); this plugin runs RoCE v2 only: unset "
        "it or set 2, and configure the NIC's GID table for RoCE v2");
  }
  assign(roce_version, &config->roce_version);
  std::optional<bool> pci_order;
  std::optional<bool> query_speed;
  std::optional<bool> merge_nics;
  std::optional<bool> merge_vfs;
  if (!reader.boolean("NCCL_IB_DEVICE_PCI_ORDER", &pci_order) ||
      !reader.boolean("NCCL_IB_QUERY_PORT_SPEED", &query_speed) ||
      !reader.boolean("NCCL_IB_MERGE_NICS", &merge_nics) ||
      !reader.boolean("NCCL_IB_MERGE_VFS", &merge_vfs)) {
    return false;
  }
  assign(pci_order, &config->device_pci_order);
  assign(query_speed, &config->query_port_speed);
  assign(merge_nics, &config->merge_nics);
  assign(merge_vfs, &config->merge_vfs);
  if (const auto hca = reader.text("NCCL_IB_HCA")) {
    config->ib_hca = *hca;
  }
  return true;
}

bool read_queue_pairs(Reader& reader, Config* config) {
  std::optional<int> timeout;
  std::optional<int> retry;
  std::optional<int> qps;
  std::optional<int> pkey;
  std::optional<bool> roce_inline;
  std::optional<bool> ib_inline;
  std::optional<bool> split;
  std::optional<bool> ece;
  std::optional<bool> adaptive_routing;
  std::optional<int> ar_threshold;
  std::optional<bool> retry_all;
  std::optional<int> retry_count;
  std::optional<int> retry_sleep;
  if (!reader.integer("NCCL_IB_TIMEOUT", &timeout) ||
      !reader.integer("NCCL_IB_RETRY_CNT", &retry) ||
      !reader.integer("NCCL_IB_QPS_PER_CONNECTION", &qps) ||
      !reader.integer("NCCL_IB_PKEY", &pkey) || !reader.boolean("NCCL_ROCE_INLINE", &roce_inline) ||
      !reader.boolean("NCCL_IB_USE_INLINE", &ib_inline) ||
      !reader.boolean("NCCL_IB_SPLIT_DATA_ON_QPS", &split) ||
      !reader.boolean("NCCL_IB_ECE_ENABLE", &ece) ||
      !reader.boolean("NCCL_IB_ADAPTIVE_ROUTING", &adaptive_routing) ||
      !reader.integer("NCCL_IB_AR_THRESHOLD", &ar_threshold) ||
      !reader.boolean("NCCL_IB_MQP_RETRY_ALL", &retry_all) ||
      !reader.integer("NCCL_IB_MQP_RETRY_CNT", &retry_count) ||
      !reader.integer("NCCL_IB_MQP_RETRY_SLEEP_MSEC", &retry_sleep)) {
    return false;
  }
  assign(retry_all, &config->mqp_retry_all);
  assign(retry_count, &config->mqp_retry_count);
  assign(retry_sleep, &config->mqp_retry_sleep_ms);
  assign(split, &config->split_data_on_qps);
  assign(ece, &config->ece_enable);
  assign(adaptive_routing, &config->adaptive_routing);
  assign(ar_threshold, &config->ar_threshold);
  assign(timeout, &config->ib_timeout);
  assign(retry, &config->retry_count);
  assign(qps, &config->qps_per_connection);
  assign(pkey, &config->pkey_index);
  if (roce_inline) {
    config->use_inline = *roce_inline;
  } else if (ib_inline) {
    config->use_inline = *ib_inline;
  }
  return true;
}

bool read_memory(Reader& reader, Config* config) {
  std::optional<bool> require_gdr;
  std::optional<bool> flush_disable;
  std::optional<int> relaxed;
  std::optional<bool> dmabuf;
  if (!reader.boolean("NCCL_ROCE_REQUIRE_GDR", &require_gdr) ||
      !reader.boolean("NCCL_GDR_FLUSH_DISABLE", &flush_disable) ||
      !reader.integer("NCCL_IB_PCI_RELAXED_ORDERING", &relaxed) ||
      !reader.boolean("NCCL_ROCE_DMABUF", &dmabuf)) {
    return false;
  }
  assign(require_gdr, &config->require_gdr);
  assign(flush_disable, &config->gdr_flush_disable);
  assign(relaxed, &config->pci_relaxed_ordering);
  assign(dmabuf, &config->dmabuf_enable);
  return true;
}

bool read_plumbing(Reader& reader, Config* config) {
  if (const auto lib = reader.text("NCCL_IBVERBS_LIB")) {
    config->ibverbs_lib = *lib;
  }
  if (const auto root = reader.text("NCCL_ROCE_SYSFS_ROOT")) {
    if (root->front() != '/') {
      return reader.fail(find_setting("NCCL_ROCE_SYSFS_ROOT"), *root, "is not an absolute path");
    }
    config->sysfs_root = *root;
  }
  std::optional<int> timeout;
  if (!reader.integer("NCCL_ROCE_CONNECT_TIMEOUT_MS", &timeout)) {
    return false;
  }
  assign(timeout, &config->connect_timeout_ms);
  std::optional<bool> watch;
  std::optional<int> keepalive;
  if (!reader.boolean("NCCL_ROCE_PEER_WATCH", &watch) ||
      !reader.integer("NCCL_ROCE_PEER_KEEPALIVE_S", &keepalive)) {
    return false;
  }
  assign(watch, &config->peer_watch);
  assign(keepalive, &config->peer_keepalive_s);
  std::optional<bool> failover;
  std::optional<bool> ib_failover;
  std::optional<int> recovery_timeout;
  if (!reader.boolean("NCCL_ROCE_FAILOVER", &failover) ||
      !reader.boolean("NCCL_IB_RESILIENCY_PORT_FAILOVER", &ib_failover) ||
      !reader.integer("NCCL_ROCE_RECOVERY_TIMEOUT_S", &recovery_timeout)) {
    return false;
  }
  if (failover) {
    config->failover = *failover;
  } else if (ib_failover) {
    config->failover = *ib_failover;
  }
  assign(recovery_timeout, &config->recovery_timeout_s);
  // The listener's interface when the GID's address is not one of this namespace (core/
  // listen_address.h); its syntax is checked at init.
  if (const auto ifname = reader.text("NCCL_SOCKET_IFNAME")) {
    config->socket_ifname = *ifname;
  }
  return true;
}

bool read_telemetry(Reader& reader, Config* config) {
  std::optional<bool> summary;
  std::optional<int> interval;
  std::optional<int> stall;
  std::optional<int> sample;
  if (!reader.boolean("NCCL_ROCE_STATS", &summary) ||
      !reader.integer("NCCL_ROCE_STATS_INTERVAL_MS", &interval) ||
      !reader.integer("NCCL_ROCE_STALL_WARN_MS", &stall) ||
      !reader.integer("NCCL_ROCE_STATS_SAMPLE", &sample)) {
    return false;
  }
  assign(sample, &config->stats_sample);
  assign(summary, &config->stats_summary);
  assign(interval, &config->stats_interval_ms);
  assign(stall, &config->stall_warn_ms);
  if (const auto file = reader.text("NCCL_ROCE_STATS_FILE")) {
    config->stats_file = *file;
  }
  return true;
}

void report_recognised(Reader& reader, Config* config) {
  for (const Setting& setting : config_detail::registry()) {
    if (setting.kind != Kind::Recognised) {
      continue;
    }
    if (const auto value = reader.raw(setting.info.name)) {
      config->notes.push_back(std::string(setting.info.name) + "=" + *value + ": " +
                              std::string(setting.info.description));
    }
  }
}

std::optional<std::string> getenv_lookup(std::string_view name, void* /*user*/) {
  const std::string key(name);
  const char* value = std::getenv(key.c_str());
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

// The configuration in force. Configs are never freed once published: config() hands out
// references that other threads may hold while a later init reloads.
std::mutex g_load_mutex;
std::vector<std::unique_ptr<const Config>> g_published;
std::atomic<const Config*> g_current{nullptr};

}  // namespace

const std::vector<SettingInfo>& settings() {
  static const std::vector<SettingInfo> list = [] {
    std::vector<SettingInfo> out;
    for (const Setting& setting : config_detail::registry()) {
      out.push_back(setting.info);
    }
    return out;
  }();
  return list;
}

Result<Config> parse_config(EnvLookup lookup, void* user) {
  Config config;
  Reader reader(lookup, user, &config.notes);
  if (!read_traffic_class(reader, &config) || !read_gid_selection(reader, &config) ||
      !read_queue_pairs(reader, &config) || !read_memory(reader, &config) ||
      !read_plumbing(reader, &config) || !read_telemetry(reader, &config)) {
    return failure(reader.error());
  }
  report_recognised(reader, &config);
  return config;
}

Status load_config() {
  Result<Config> parsed = parse_config(&getenv_lookup, nullptr);
  if (!parsed) {
    return failure(parsed.error());
  }
  const Config* published = nullptr;
  {
    const std::lock_guard lock(g_load_mutex);
    const Config* current = g_current.load(std::memory_order_acquire);
    if (current != nullptr && *current == *parsed) {
      return {};  // ncclNet v11 inits once per communicator: report the settings once
    }
    g_published.push_back(std::make_unique<const Config>(std::move(*parsed)));
    published = g_published.back().get();
    g_current.store(published, std::memory_order_release);
  }
  for (const std::string& note : published->notes) {
    ROCE_INFO(NCCL_INIT | NCCL_ENV, "{}", note);
  }
  return {};
}

const Config& config() {
  static const Config defaults;
  const Config* current = g_current.load(std::memory_order_acquire);
  return current != nullptr ? *current : defaults;
}

}  // namespace roce
