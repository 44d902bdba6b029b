// Every setting the plugin reads, in one typed registry. Parsed once per plugin init from the
// environment (NCCL_ROCE_* settings of our own, NCCL_IB_* settings with NCCL's meaning), validated
// (an out-of-range value is an init error naming the variable, the value and the accepted range),
// then immutable. util/config.cpp holds the table: name, type, default, range, documentation;
// docs/configuration.md is generated from the same table and checked in the test suite.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roce/result.h"

namespace roce {

enum class AddressFamily { Ipv4, Ipv6 };

// Where the traffic class in force came from, for the init banner and for error messages.
enum class TrafficClassSource { Default, CommConfig, NcclIbTc, NcclRoceDscp, NcclRoceTc };

struct Config {
  // Device and GID selection
  std::string ib_hca;  // NCCL_IB_HCA, e.g. "^mlx5_1", "=mlx5_0:1,mlx5_2"
  int gid_index = -1;  // NCCL_IB_GID_INDEX; -1 = automatic
  AddressFamily addr_family = AddressFamily::Ipv4;  // NCCL_IB_ADDR_FAMILY (AF_INET/AF_INET6)
  std::string addr_range;                           // NCCL_IB_ADDR_RANGE, CIDR; empty = any
  int roce_version = 2;          // NCCL_IB_ROCE_VERSION_NUM (1 is refused with a hint)
  bool device_pci_order = true;  // NCCL_IB_DEVICE_PCI_ORDER: devices sorted by PCI path
  bool query_port_speed = true;  // NCCL_IB_QUERY_PORT_SPEED: ibv_query_port_speed first
  bool merge_nics = true;        // NCCL_IB_MERGE_NICS: pciPath folded, makeVDevice fuses
  bool merge_vfs = true;         // NCCL_IB_MERGE_VFS: the fold takes the device digits too

  // Traffic class and service level. traffic_class is set when any of NCCL_ROCE_TC,
  // NCCL_ROCE_DSCP (tc = dscp << 2) or NCCL_IB_TC is set, in that order of precedence; otherwise
  // the communicator's class (v10 connect config, v11 init config) applies, else 0.
  std::optional<int> traffic_class;
  TrafficClassSource traffic_class_source = TrafficClassSource::Default;
  std::optional<int> service_level;  // NCCL_IB_SL (0..15)
  // NCCL_IB_FIFO_TC: the class of the receiver's data QPs (clear-to-send writes and the ACKs
  // of the data), as in NCCL; unset, they take the traffic class.
  std::optional<int> fifo_traffic_class;

  // Queue pairs
  int ib_timeout = 20;         // NCCL_IB_TIMEOUT (0..31): 4.096 us * 2^timeout; 0 = none
  int retry_count = 7;         // NCCL_IB_RETRY_CNT (0..7)
  int qps_per_connection = 1;  // NCCL_IB_QPS_PER_CONNECTION (1..128)
  int pkey_index = 0;          // NCCL_IB_PKEY
  bool split_data_on_qps = false;
  bool ece_enable = true;  // NCCL_IB_ECE_ENABLE: the sender offers its QP's ECE
  // NCCL_IB_ADAPTIVE_ROUTING (net_ib's default on RoCE: off) and NCCL_IB_AR_THRESHOLD: a single
  // send larger than the threshold goes as RDMA WRITE plus a zero-length WRITE WITH IMMEDIATE.
  bool adaptive_routing = false;
  int ar_threshold = 8192;
  // NCCL_IB_MQP_RETRY_ALL / _CNT / _SLEEP_MSEC: a failed ibv_modify_qp is retried (ETIMEDOUT
  // only, unless all) this many times, this far apart.
  bool mqp_retry_all = false;
  int mqp_retry_count = 34;
  int mqp_retry_sleep_ms = 100;  // NCCL_IB_SPLIT_DATA_ON_QPS: split each message over the QPs
  // NCCL_ROCE_INLINE (else NCCL_IB_USE_INLINE): CTS entries and small host payloads posted
  // inline; false gives the data QPs max_inline_data 0.
  bool use_inline = true;

  // Memory and GPUDirect
  bool require_gdr = false;        // NCCL_ROCE_REQUIRE_GDR: init fails without GPUDirect
  bool gdr_flush_disable = false;  // NCCL_GDR_FLUSH_DISABLE
  int pci_relaxed_ordering = 2;    // NCCL_IB_PCI_RELAXED_ORDERING (0 off, 1 on, 2 auto)
  bool dmabuf_enable = true;       // NCCL_ROCE_DMABUF (0 hides DMABUF from ptrSupport)

  // Plumbing
  std::string ibverbs_lib;          // NCCL_IBVERBS_LIB; empty = "libibverbs.so.1"
  std::string sysfs_root = "/sys";  // NCCL_ROCE_SYSFS_ROOT (tests, containers)
  int connect_timeout_ms = 30000;   // NCCL_ROCE_CONNECT_TIMEOUT_MS: handshake deadline
  std::string socket_ifname;        // NCCL_SOCKET_IFNAME: the listener's fallback interface
  bool peer_watch = true;           // NCCL_ROCE_PEER_WATCH: net/peer_watch.h
  int peer_keepalive_s = 20;        // NCCL_ROCE_PEER_KEEPALIVE_S: silent peer host bound
  // NCCL_ROCE_FAILOVER (else NCCL_IB_RESILIENCY_PORT_FAILOVER): recovery epochs
  // (core/datapath/recovery_epoch.h) keep a connection whose QPs failed.
  bool failover = true;
  int recovery_timeout_s = 300;  // NCCL_ROCE_RECOVERY_TIMEOUT_S: the wait for a port to come back

  // Telemetry (plugin/telemetry/)
  bool stats_summary = false;     // NCCL_ROCE_STATS: one INFO line per comm at close
  std::string stats_file;         // NCCL_ROCE_STATS_FILE: JSON lines (+ .prom); %h, %p
  int stats_interval_ms = 10000;  // NCCL_ROCE_STATS_INTERVAL_MS
  int stall_warn_ms = 5000;       // NCCL_ROCE_STALL_WARN_MS; 0 = no stall reports
  int stats_sample = 8;           // NCCL_ROCE_STATS_SAMPLE: latency of one request in this many

  // One line per setting found in the environment, and per recognised NCCL setting that we do
  // not apply (with what we do instead); load_config() logs them at INFO (ENV).
  std::vector<std::string> notes;

  bool operator==(const Config&) const = default;
};

// One entry of the registry, for the init banner, docs and tests.
struct SettingInfo {
  std::string_view name;          // "NCCL_IB_TC"
  std::string_view default_text;  // "unset", "20"
  std::string_view range_text;    // "0..255"
  std::string_view description;
  std::string_view type_text;    // "integer", "boolean", "string", ...
  std::string_view counterpart;  // the NCCL setting with the same role, if any
  std::string_view precedence;   // how it combines with related settings; empty if alone
  bool applied = true;           // false: a recognised NCCL setting that we report, not apply
};

// All settings the plugin reads, in documentation order.
const std::vector<SettingInfo>& settings();

// The registry as the Markdown tables of docs/configuration.md (checked by a unit test).
std::string settings_markdown();

// Parses a configuration from a lookup function (getenv in production, a map in tests). An
// invalid setting fails with one actionable line.
using EnvLookup = std::optional<std::string> (*)(std::string_view name, void* user);
Result<Config> parse_config(EnvLookup lookup, void* user);

// The configuration in force, loaded from the process environment by load_config().
// load_config() is called by plugin init; on invalid settings it fails with parse_config's line
// (which init logs), leaving the configuration in force unchanged. The notes are logged when a
// configuration is first published, not again when a later init finds the same settings.
// References returned by config() stay valid for the life of the process.
Status load_config();
const Config& config();

}  // namespace roce
