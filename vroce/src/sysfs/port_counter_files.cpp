#include "sysfs/port_counter_files.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sysfs/fake_sysfs.h"
#include "util/log.h"

namespace vroce::sysfs {
namespace {

std::string counter_path(const std::string& port_dir, size_t index) {
  const packet_io::PortCounterInfo& info =
      packet_io::port_counter_info(static_cast<packet_io::PortCounter>(index));
  return port_dir + "/" + info.group + "/" + info.name;
}

std::optional<uint64_t> read_counter_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_counter_text(text.str());
}

}  // namespace

std::optional<uint64_t> parse_counter_text(const std::string& text) noexcept {
  size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' ')) {
    --end;
  }
  uint64_t value = 0;
  auto [at, ec] = std::from_chars(text.data(), text.data() + end, value);
  if (ec != std::errc() || at != text.data() + end || end == 0) {
    return std::nullopt;
  }
  return value;
}

PortCounterFiles::PortCounterFiles(std::string port_dir) : dir_(std::move(port_dir)) {}

void PortCounterFiles::continue_from_files(const packet_io::PortCounters& counters) {
  std::lock_guard lock(mutex_);
  packet_io::PortCounters::Snapshot counted = counters.snapshot();
  for (size_t i = 0; i < packet_io::kPortCounterCount; ++i) {
    // Absent or unreadable: start from 0 (the file is created at the first write).
    uint64_t held = read_counter_file(counter_path(dir_, i)).value_or(0);
    uint64_t divisor = packet_io::port_counter_info(static_cast<packet_io::PortCounter>(i)).divisor;
    base_[i] = static_cast<int64_t>(held * divisor) - static_cast<int64_t>(counted[i]);
  }
  written_once_ = false;  // the next publish writes, whatever this process counted before
}

void PortCounterFiles::publish(const packet_io::PortCounters& counters, bool force) {
  std::lock_guard lock(mutex_);
  // Taken under the lock: a later write never holds older counts than an earlier one.
  packet_io::PortCounters::Snapshot counted = counters.snapshot();
  if (!force && written_once_ && counted == written_) {
    return;
  }
  for (const char* group : {"/hw_counters", "/counters"}) {
    if (mkdir((dir_ + group).c_str(), 0755) != 0 && errno != EEXIST && !complained_) {
      complained_ = true;
      VROCE_LOG(Warn, "fake sysfs: cannot create %s%s: %s; port counters are not published",
                dir_.c_str(), group, std::strerror(errno));
    }
  }
  for (size_t i = 0; i < packet_io::kPortCounterCount; ++i) {
    int64_t total = base_[i] + static_cast<int64_t>(counted[i]);
    uint64_t shown =
        total > 0 ? static_cast<uint64_t>(total) /
                        packet_io::port_counter_info(static_cast<packet_io::PortCounter>(i)).divisor
                  : 0;
    const Status replaced = replace_file(counter_path(dir_, i), std::to_string(shown) + "\n");
    if (!replaced && !complained_) {
      complained_ = true;
      VROCE_LOG(Warn, "fake sysfs: %s; port counters are not published", replaced.error().c_str());
    }
  }
  written_ = counted;
  written_once_ = true;
  last_write_ = Clock::now();
}

std::optional<PortCounterFiles::Clock::time_point> PortCounterFiles::due(
    const packet_io::PortCounters& counters) const {
  std::lock_guard lock(mutex_);
  if (written_once_ && counters.snapshot() == written_) {
    return std::nullopt;
  }
  return last_write_ + kInterval;
}

void create_port_counter_files(const std::string& port_dir, std::vector<std::string>* errors) {
  for (const char* group : {"/hw_counters", "/counters"}) {
    if (mkdir((port_dir + group).c_str(), 0755) != 0 && errno != EEXIST) {
      if (errors->empty()) {
        errors->push_back("cannot create directory " + port_dir + group + ": " +
                          std::strerror(errno));
      }
      return;
    }
  }
  for (size_t i = 0; i < packet_io::kPortCounterCount; ++i) {
    if (const Status created = create_file_if_absent(counter_path(port_dir, i), "0\n"); !created) {
      if (errors->empty()) {
        errors->push_back(created.error());
      }
      return;
    }
  }
}

}  // namespace vroce::sysfs
