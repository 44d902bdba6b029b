// The port's fabric counters, as a ConnectX (mlx5) keeps them in sysfs under
// <root>/class/infiniband/<dev>/ports/<port>/: hw_counters/ (RoCE transport errors and
// congestion notification) and counters/ (the port's traffic). A device's counters are read at
// init; at a comm's close (NCCL_ROCE_STATS) and failure, and by the stats writer, the increases
// since init are reported with a verdict: sequence errors and ACK timeouts mean packets were
// lost, ECN marks and CNPs mean the fabric is congested. vroce writes the same files from its own
// counts (docs/vroce.md), so every path is tested.
//
// Counters that cannot be read (a NIC or kernel without hw_counters, permissions, a container
// without /sys/class/infiniband) are reported once at INFO at init and left out; never an error.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace roce::telemetry {

enum class FabricMeaning {
  Loss,        // a packet went missing or was refused (sequence errors, timeouts, port errors)
  Congestion,  // ECN CE marks and CNPs
  Traffic,     // data and packets carried
};

struct FabricCounterSpec {
  const char* name;   // mlx5's file name
  const char* group;  // "hw_counters" or "counters"
  FabricMeaning meaning;
};

inline constexpr FabricCounterSpec kFabricCounters[] = {
    {"out_of_sequence", "hw_counters", FabricMeaning::Loss},
    {"packet_seq_err", "hw_counters", FabricMeaning::Loss},
    {"implied_nak_seq_err", "hw_counters", FabricMeaning::Loss},
    {"local_ack_timeout_err", "hw_counters", FabricMeaning::Loss},
    {"np_ecn_marked_roce_packets", "hw_counters", FabricMeaning::Congestion},
    {"np_cnp_sent", "hw_counters", FabricMeaning::Congestion},
    {"rp_cnp_handled", "hw_counters", FabricMeaning::Congestion},
    {"port_rcv_errors", "counters", FabricMeaning::Loss},
    {"port_xmit_discards", "counters", FabricMeaning::Loss},
    {"port_xmit_data", "counters", FabricMeaning::Traffic},  // 4-byte words
    {"port_rcv_data", "counters", FabricMeaning::Traffic},
    {"port_xmit_packets", "counters", FabricMeaning::Traffic},
    {"port_rcv_packets", "counters", FabricMeaning::Traffic},
};
inline constexpr std::size_t kFabricCounterCount = std::size(kFabricCounters);

// One reading; nullopt where the file could not be read or parsed.
using FabricSample = std::array<std::optional<uint64_t>, kFabricCounterCount>;

// Increases between two samples; nullopt where either sample lacks the counter. A counter that
// went down (reset, or a wrapped 32-bit counter) counts from 0: its new value.
using FabricDelta = std::array<std::optional<uint64_t>, kFabricCounterCount>;

// "12\n" -> 12; nullopt for anything but a decimal number.
std::optional<uint64_t> parse_counter(std::string_view text) noexcept;

FabricSample read_fabric_counters(const std::string& port_dir);
FabricDelta fabric_delta(const FabricSample& before, const FabricSample& after) noexcept;

enum class FabricVerdict { Quiet, Loss, Congestion, LossAndCongestion, Unknown };
FabricVerdict fabric_verdict(const FabricDelta& delta) noexcept;
const char* fabric_verdict_name(FabricVerdict verdict) noexcept;  // "loss", "congestion", ...

// "fabric counters on mlx5_0 port 1 since init: packet_seq_err +12, local_ack_timeout_err +3:
// packets were lost ...; np_ecn_marked_roce_packets +500, ...: the fabric is congested ..."
// Lists the loss and congestion counters that rose, then what they mean and what to check.
std::string fabric_report(const FabricDelta& delta, std::string_view device, int port);

// The names of the counters a sample lacks, comma-separated ("" when none).
std::string missing_counters(const FabricSample& sample);

// One plugin device's counters: the sample taken at init and reports against it. Registered
// for the stats writer while it lives. Thread-safe (the baseline never changes).
class FabricCounterWatch {
 public:
  // Reads the baseline; says at INFO which counters are not readable (once per device).
  FabricCounterWatch(std::string device, int port, std::string port_dir);
  ~FabricCounterWatch();
  FabricCounterWatch(const FabricCounterWatch&) = delete;
  FabricCounterWatch& operator=(const FabricCounterWatch&) = delete;

  const std::string& device() const noexcept { return device_; }
  int port() const noexcept { return port_; }
  bool any_readable() const noexcept { return any_readable_; }

  FabricDelta delta_since_init() const;
  // fabric_report() of the increases since init; "" when no counter is readable.
  std::string report_since_init() const;

  struct Reading {
    std::string device;
    int port = 0;
    FabricDelta delta;
  };
  // Every live watch's increases since init (the stats writer).
  static std::vector<Reading> read_all();

 private:
  std::string device_;
  int port_;
  std::string port_dir_;
  FabricSample baseline_;
  bool any_readable_ = false;
};

}  // namespace roce::telemetry
