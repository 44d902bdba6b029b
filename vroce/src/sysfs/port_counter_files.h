// A device's port counters in the fake sysfs tree, as mlx5 shows them:
// <root>/class/infiniband/<dev>/ports/1/hw_counters/<name> and .../ports/1/counters/<name>, one
// decimal number per file (the data counters in 4-octet words, as the kernel's).
//
// Who writes them: only a process whose engine of the device runs, and only one process can run
// it (it owns the device's UDP port), so the files are never written by two processes at once.
// When an engine starts it continues from what the files hold, so the counts of successive users
// of a device add up, like a NIC's counters since boot; counters are per device port, summed over
// the processes that used the device one after the other.
//
// When: at most kInterval after a change while the engine runs (its progress thread checks), and
// at once when a QP enters the error state (before its error completion is visible), when a QP is
// destroyed and when the engine stops. Every file is replaced atomically; writes are ordered, so
// a reader never sees a counter go back.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "packet_io/port_counters.h"

namespace vroce::sysfs {

class PortCounterFiles {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kInterval{100};

  // port_dir: <root>/class/infiniband/<dev>/ports/1
  explicit PortCounterFiles(std::string port_dir);

  // The device's engine starts: what this process counts from now on adds to the files' values.
  void continue_from_files(const packet_io::PortCounters& counters);

  // Writes every file when the counts changed since the last write, or always with `force`.
  void publish(const packet_io::PortCounters& counters, bool force);

  // When the next write is due: nullopt when nothing changed since the last one.
  std::optional<Clock::time_point> due(const packet_io::PortCounters& counters) const;

 private:
  std::string dir_;
  mutable std::mutex mutex_;
  std::array<int64_t, packet_io::kPortCounterCount> base_{};  // added to this process's counts
  packet_io::PortCounters::Snapshot written_{};
  bool written_once_ = false;
  Clock::time_point last_write_{};
  bool complained_ = false;
};

// Creates the counter files of a port that do not exist yet, holding 0 (device enumeration). A
// file that exists is left alone: another process may be keeping it current. One message per
// failure in *errors.
void create_port_counter_files(const std::string& port_dir, std::vector<std::string>* errors);

// Parses a counter file's content ("1234\n"); nullopt when it is not a decimal number.
std::optional<uint64_t> parse_counter_text(const std::string& text) noexcept;

}  // namespace vroce::sysfs
