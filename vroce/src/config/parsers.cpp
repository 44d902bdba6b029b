// Parsers for vroce's environment variables. Every parser is strict (the whole text must match,
// no trailing garbage) because a silently half-read knob is worse than a loud rejection.
#include "config/parsers.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <string_view>

namespace vroce {
namespace {

constexpr uint32_t kPsnLimit = 1U << 24;
constexpr uint32_t kMaxDelayUs = 10'000'000;  // 10 s: longer is a typo, not a test
constexpr double kMaxTimeScale = 1000.0;
constexpr size_t kMaxDeviceNameLength = 63;  // IBV_SYSFS_NAME_MAX - 1
constexpr size_t kMaxBindingLength = 63;
constexpr size_t kMaxPciFunctions = 8;

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

template <typename Unsigned>
std::optional<Unsigned> parse_unsigned(std::string_view text) {
  Unsigned value{};
  if (text.empty() || text.front() == '+' || text.front() == '-') {
    return std::nullopt;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_double(std::string_view text) {
  double value = 0;
  if (text.empty() || text.front() == '+') {
    return std::nullopt;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

bool valid_device_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxDeviceNameLength) {
    return false;
  }
  if (!((name.front() >= 'a' && name.front() <= 'z') ||
        (name.front() >= 'A' && name.front() <= 'Z'))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

bool valid_binding(std::string_view binding) {
  if (binding.empty() || binding.size() > kMaxBindingLength) {
    return false;
  }
  return std::none_of(binding.begin(), binding.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '=' || c == ',' || c == '/' ||
           static_cast<unsigned char>(c) < 0x20;
  });
}

Result<double> parse_probability(std::string_view key, std::string_view value) {
  auto parsed = parse_double(value);
  if (!parsed || *parsed < 0.0 || *parsed > 1.0) {
    return failure(std::string(key) + " must be a probability between 0 and 1, got " +
                   quoted(value));
  }
  return *parsed;
}

std::string fault_keys_help() {
  return "accepted keys: drop=<p>, every=<k>, psn=<n>[:<n>...], dup=<p>, corrupt=<p>, "
         "reorder=<p>, ecn=<p>, delay_us=<us>, seed=<n> (p a probability in [0, 1])";
}

}  // namespace

std::vector<DeviceSpec> default_device_specs() {
  std::vector<DeviceSpec> specs;
  specs.reserve(8);
  for (int i = 0; i < 8; ++i) {
    specs.push_back({"vroce" + std::to_string(i), "127.0.0." + std::to_string(11 + i)});
  }
  return specs;
}

Result<std::vector<DeviceSpec>> parse_device_specs(const std::string& text) {
  std::vector<DeviceSpec> specs;
  if (trim(text).empty()) {
    return specs;  // an explicitly empty list: a host with no RDMA devices
  }
  std::set<std::string, std::less<>> names;
  std::set<std::string, std::less<>> bindings;
  for (std::string_view entry : split(text, ',')) {
    entry = trim(entry);
    size_t equals = entry.find('=');
    if (entry.empty() || equals == std::string_view::npos) {
      return failure(
          "entry " + quoted(entry) +
          " is not <name>=<address or netdev> (example: vroce0=127.0.0.11,vroce1=veth0)");
    }
    std::string_view name = trim(entry.substr(0, equals));
    std::string_view binding = trim(entry.substr(equals + 1));
    if (!valid_device_name(name)) {
      return failure(
          "device name " + quoted(name) +
          " must start with a letter and hold at most 63 letters, digits, '_', '-' or '.'");
    }
    if (!valid_binding(binding)) {
      return failure("device " + std::string(name) + " is bound to " + quoted(binding) +
                     ", which is neither an IPv4/IPv6 address nor a netdev name");
    }
    if (!names.insert(std::string(name)).second) {
      return failure("device name " + std::string(name) + " appears twice");
    }
    if (!bindings.insert(std::string(binding)).second) {
      return failure(
          std::string(binding) +
          " is bound to two devices; each device needs its own address (UDP port 4791 of "
          "an address belongs to one NIC)");
    }
    specs.push_back({std::string(name), std::string(binding)});
  }
  return specs;
}

Result<std::vector<std::vector<std::string>>> parse_pci_functions(const std::string& text) {
  std::vector<std::vector<std::string>> groups;
  if (trim(text).empty()) {
    return groups;
  }
  std::set<std::string, std::less<>> seen;
  for (std::string_view entry : split(text, ',')) {
    std::vector<std::string> group;
    for (std::string_view name : split(entry, '+')) {
      name = trim(name);
      if (!valid_device_name(name)) {
        return failure("device name " + quoted(name) + " in " + quoted(trim(entry)) +
                       " is not a vroce device name (example: pfa+pfb,pfc+pfd)");
      }
      if (!seen.insert(std::string(name)).second) {
        return failure("device " + std::string(name) +
                       " is in two places; each device is one function of one PCI device");
      }
      group.emplace_back(name);
    }
    // A PCI device has 8 functions (0..7) without ARI; one function alone is what every
    // device already is.
    if (group.size() < 2 || group.size() > kMaxPciFunctions) {
      return failure("PCI device " + quoted(trim(entry)) + " has " + std::to_string(group.size()) +
                     " functions; give 2 to 8 device names joined by '+'");
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

Result<std::vector<PortEventSpec>> parse_port_events(const std::string& text) {
  std::vector<PortEventSpec> events;
  for (std::string_view entry : split(text, ',')) {
    entry = trim(entry);
    if (entry.empty()) {
      continue;
    }
    const size_t colon = entry.find(':');
    const size_t at = entry.find('@');
    if (colon == std::string_view::npos || at == std::string_view::npos || at < colon) {
      return failure(quoted(entry) + " is not DEVICE:down@MS or DEVICE:up@MS (example: " +
                     "vroce1:down@3000,vroce1:up@9000)");
    }
    PortEventSpec event;
    const std::string_view name = trim(entry.substr(0, colon));
    const std::string_view what = trim(entry.substr(colon + 1, at - colon - 1));
    const std::string_view when = trim(entry.substr(at + 1));
    if (!valid_device_name(name)) {
      return failure("device name " + quoted(name) + " in " + quoted(entry) +
                     " is not a vroce device name");
    }
    if (what != "down" && what != "up") {
      return failure(quoted(what) + " in " + quoted(entry) + " is neither down nor up");
    }
    auto [end, ec] = std::from_chars(when.data(), when.data() + when.size(), event.at_ms);
    if (when.empty() || ec != std::errc() || end != when.data() + when.size()) {
      return failure(quoted(when) + " in " + quoted(entry) +
                     " is not a time in milliseconds (0..4294967295)");
    }
    event.device = std::string(name);
    event.up = what == "up";
    events.push_back(std::move(event));
  }
  std::stable_sort(
      events.begin(), events.end(),
      [](const PortEventSpec& a, const PortEventSpec& b) { return a.at_ms < b.at_ms; });
  return events;
}

Result<FaultSpec> parse_fault_spec(const std::string& text) {
  FaultSpec spec;
  if (trim(text).empty()) {
    return spec;
  }
  std::set<std::string, std::less<>> seen;
  for (std::string_view entry : split(text, ',')) {
    entry = trim(entry);
    size_t equals = entry.find('=');
    if (equals == std::string_view::npos) {
      return failure("entry " + quoted(entry) + " is not <key>=<value>; " + fault_keys_help());
    }
    std::string_view key = trim(entry.substr(0, equals));
    std::string_view value = trim(entry.substr(equals + 1));
    if (!seen.insert(std::string(key)).second) {
      return failure("key " + std::string(key) + " appears twice");
    }
    if (key == "drop" || key == "dup" || key == "corrupt" || key == "reorder" || key == "ecn") {
      auto probability = parse_probability(key, value);
      if (!probability) {
        return failure(probability.error());
      }
      double& target = key == "drop"      ? spec.drop_probability
                       : key == "dup"     ? spec.duplicate_probability
                       : key == "corrupt" ? spec.corrupt_probability
                       : key == "ecn"     ? spec.ecn_mark_probability
                                          : spec.reorder_probability;
      target = *probability;
    } else if (key == "every") {
      auto every = parse_unsigned<uint64_t>(value);
      if (!every) {
        return failure(
            "every must be a whole number k (drop every k-th data packet; 0 = off), got " +
            quoted(value));
      }
      spec.drop_every = *every;
    } else if (key == "psn") {
      for (std::string_view item : split(value, ':')) {
        auto psn = parse_unsigned<uint32_t>(item);
        if (!psn || *psn >= kPsnLimit) {
          return failure("psn takes PSNs below 2^24 separated by ':' (psn=5:9), got " +
                         quoted(value));
        }
        spec.drop_psns.push_back(*psn);
      }
    } else if (key == "delay_us") {
      auto delay = parse_unsigned<uint32_t>(value);
      if (!delay || *delay > kMaxDelayUs) {
        return failure("delay_us must be a whole number of microseconds up to 10000000, got " +
                       quoted(value));
      }
      spec.delay_us = *delay;
    } else if (key == "seed") {
      auto seed = parse_unsigned<uint64_t>(value);
      if (!seed) {
        return failure("seed must be a whole number, got " + quoted(value));
      }
      spec.seed = *seed;
    } else {
      return failure("unknown key " + quoted(key) + "; " + fault_keys_help());
    }
  }
  return spec;
}

Result<uint32_t> parse_port_speed_gbps(const std::string& text) {
  auto value = parse_unsigned<uint32_t>(trim(text));
  if (value && std::find(std::begin(kSupportedPortGbps), std::end(kSupportedPortGbps), *value) !=
                   std::end(kSupportedPortGbps)) {
    return *value;
  }
  return failure("accepted port speeds are 100, 200, 400 and 800 (Gb/s), got " + quoted(text));
}

Result<double> parse_time_scale(const std::string& text) {
  auto value = parse_double(trim(text));
  if (value && *value > 0.0 && *value <= kMaxTimeScale) {
    return *value;
  }
  return failure(
      "the time scale must be a number above 0 and at most 1000 (0.001 turns a 4 s timer "
      "into 4 ms), got " +
      quoted(text));
}

Result<uint8_t> parse_traffic_class(const std::string& text) {
  auto value = parse_unsigned<uint32_t>(trim(text));
  if (value && *value <= 255) {
    return static_cast<uint8_t>(*value);
  }
  return failure(
      "the traffic class is the whole IP TOS byte, a decimal number from 0 to 255 (DSCP 26 "
      "with ECT(0) is 106), got " +
      quoted(text));
}

Result<uint32_t> parse_stall_warn_ms(const std::string& text) {
  auto value = parse_unsigned<uint32_t>(trim(text));
  if (value && *value >= 1 && *value <= 3'600'000) {
    return *value;
  }
  return failure("the stall warning delay is in milliseconds, from 1 to 3600000, got " +
                 quoted(text));
}

Result<uint32_t> parse_spin_us(const std::string& text) {
  auto value = parse_unsigned<uint32_t>(trim(text));
  if (value && *value <= 100'000) {
    return *value;
  }
  return failure(
      "the progress thread's spin after activity is in microseconds, from 0 (never spin) to "
      "100000, got " +
      quoted(text));
}

Result<bool> parse_gso(const std::string& text) {
  std::string_view value = trim(text);
  if (value == "1") {
    return true;
  }
  if (value == "0") {
    return false;
  }
  return failure(
      "VROCE_GSO is 1 (send bursts with UDP GSO, receive with UDP GRO) or 0 (one datagram per "
      "packet), got " +
      quoted(text));
}

Result<bool> parse_gpu_copies(const std::string& text) {
  std::string_view value = trim(text);
  if (value == "helper") {
    return true;
  }
  if (value == "in-process") {
    return false;
  }
  return failure(
      "accepted values are helper (copies made by vroce's helper process) and in-process "
      "(copies made inside the application's process), got " +
      quoted(text));
}

Result<GpuCopyKernel> parse_gpu_copy_kernel(const std::string& text) {
  std::string_view value = trim(text);
  if (value == "auto") {
    return GpuCopyKernel::Auto;
  }
  if (value == "on") {
    return GpuCopyKernel::On;
  }
  if (value == "off") {
    return GpuCopyKernel::Off;
  }
  return failure(
      "accepted values are auto (the copy kernel where the GPU is shared through MPS), on and "
      "off, got " +
      quoted(text));
}

Result<uint32_t> parse_gpu_copy_kernel_max(const std::string& text) {
  auto value = parse_unsigned<uint32_t>(trim(text));
  if (value && *value <= (1U << 20)) {
    return *value;
  }
  return failure("a size in bytes from 0 to 1048576 (the copy helper's staging buffer), got " +
                 quoted(text));
}

Result<uint32_t> parse_gpu_copy_kernel_idle_ms(const std::string& text) {
  auto value = parse_unsigned<uint32_t>(trim(text));
  if (value && *value >= 1 && *value <= 3'600'000) {
    return *value;
  }
  return failure("the copy kernel's idle time is in milliseconds, from 1 to 3600000, got " +
                 quoted(text));
}

Result<bool> parse_wire(const std::string& text) {
  std::string_view value = trim(text);
  if (value == "udp") {
    return false;
  }
  if (value == "shm") {
    return true;
  }
  return failure(
      "VROCE_WIRE is udp (every packet a UDP datagram) or shm (packets to devices of this host "
      "through shared-memory rings, UDP to the others), got " +
      quoted(text));
}

Result<bool> parse_identity(const std::string& text) {
  std::string_view value = trim(text);
  if (value == "vroce") {
    return false;
  }
  if (value == "connectx7") {
    return true;
  }
  return failure(
      "accepted identities are vroce (vroce's own vendor and part ids) and connectx7 "
      "(Mellanox 0x02c9, part 4129), got " +
      quoted(text));
}

Result<std::string> parse_path(const std::string& text) {
  if (text.empty()) {
    return failure("the path is empty");
  }
  return text;
}

Result<EceSetting> parse_ece(const std::string& text) {
  std::string_view value = trim(text);
  if (value == "off") {
    return EceSetting{false, 0};
  }
  if (value.starts_with("0x") || value.starts_with("0X")) {
    value.remove_prefix(2);
  }
  uint32_t options = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), options, 16);
  if (!value.empty() && ec == std::errc() && end == value.data() + value.size()) {
    return EceSetting{true, options};
  }
  return failure(
      "VROCE_ECE is off or the supported ECE options as a 32-bit hex mask (0x30000002), got " +
      quoted(text));
}

Result<uint64_t> parse_guid(const std::string& text) {
  std::string_view value = trim(text);
  if (value.starts_with("0x") || value.starts_with("0X")) {
    value.remove_prefix(2);
  }
  uint64_t guid = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), guid, 16);
  if (!value.empty() && ec == std::errc() && end == value.data() + value.size() && guid != 0) {
    return guid;
  }
  return failure("a GUID is a non-zero 64-bit hex number (0x0002c90300a1b2c3), got " +
                 quoted(text));
}

Config parse_config(const EnvLookup& lookup, std::vector<std::string>* errors) {
  Config config;
  config.devices = default_device_specs();

  // Applies one variable: on a parse error the default stays and one message is recorded.
  auto apply = [&](const char* name, const char* keeping, auto parse, auto assign) {
    std::optional<std::string> text = lookup(name);
    if (!text) {
      return;
    }
    auto parsed = parse(*text);
    if (!parsed) {
      errors->push_back(std::string(name) + "=" + quoted(*text) + " is invalid: " + parsed.error() +
                        "; keeping " + keeping);
      return;
    }
    assign(std::move(*parsed));
  };

  apply("VROCE_DEVICES", "the default vroce0..vroce7 on 127.0.0.11..127.0.0.18", parse_device_specs,
        [&](std::vector<DeviceSpec> v) { config.devices = std::move(v); });
  apply("VROCE_PORT_GBPS", "400", parse_port_speed_gbps,
        [&](uint32_t v) { config.port_speed_gbps = v; });
  apply("VROCE_TIME_SCALE", "1", parse_time_scale, [&](double v) { config.time_scale = v; });
  apply("VROCE_FAULTS", "no fault injection", parse_fault_spec,
        [&](FaultSpec v) { config.faults = std::move(v); });
  apply("VROCE_STATS_FILE", "no stats file", parse_path,
        [&](std::string v) { config.stats_file = std::move(v); });
  apply("VROCE_SYSFS_ROOT", "no fake sysfs", parse_path,
        [&](std::string v) { config.sysfs_root = std::move(v); });
  apply("VROCE_TC_OVERRIDE", "no traffic-class override", parse_traffic_class,
        [&](uint8_t v) { config.tc_override = v; });
  apply("VROCE_GPU_STALL_WARN_MS", "5000", parse_stall_warn_ms,
        [&](uint32_t v) { config.gpu_stall_warn_ms = v; });
  apply("VROCE_GPU_COPIES", "helper", parse_gpu_copies,
        [&](bool v) { config.gpu_copies_by_helper = v; });
  apply("VROCE_GPU_COPY_KERNEL", "auto", parse_gpu_copy_kernel,
        [&](GpuCopyKernel v) { config.gpu_copy_kernel = v; });
  apply("VROCE_GPU_COPY_KERNEL_MAX", "4096", parse_gpu_copy_kernel_max,
        [&](uint32_t v) { config.gpu_copy_kernel_max = v; });
  apply("VROCE_GPU_COPY_KERNEL_IDLE_MS", "20", parse_gpu_copy_kernel_idle_ms,
        [&](uint32_t v) { config.gpu_copy_kernel_idle_ms = v; });
  apply("VROCE_SPIN_US", "the automatic choice", parse_spin_us,
        [&](uint32_t v) { config.spin_us = v; });
  apply("VROCE_GSO", "1", parse_gso, [&](bool v) { config.gso = v; });
  apply("VROCE_WIRE", "udp", parse_wire, [&](bool v) { config.shm_wire = v; });
  apply("VROCE_IDENTITY", "vroce", parse_identity, [&](bool v) { config.connectx7_identity = v; });
  apply("VROCE_SYS_IMAGE_GUID", "each device's node_guid", parse_guid,
        [&](uint64_t v) { config.sys_image_guid = v; });
  apply("VROCE_ECE", "0x30000002", parse_ece, [&](EceSetting v) {
    config.ece_enabled = v.enabled;
    config.ece_options = v.options;
  });
  // Settings that name devices name those of VROCE_DEVICES (parsed above).
  auto is_device = [&](const std::string& name) {
    return std::any_of(config.devices.begin(), config.devices.end(),
                       [&](const DeviceSpec& d) { return d.name == name; });
  };
  apply("VROCE_PCI_FUNCTIONS", "one PCI device per vroce device", parse_pci_functions,
        [&](std::vector<std::vector<std::string>> v) {
          // A name that is not one of VROCE_DEVICES is a typo that would leave a card
          // half-built; refuse the whole setting, as every other malformed variable.
          for (const auto& group : v) {
            for (const std::string& name : group) {
              if (!is_device(name)) {
                errors->push_back("VROCE_PCI_FUNCTIONS names " + name +
                                  ", which is not a device of VROCE_DEVICES; keeping one PCI "
                                  "device per vroce device");
                return;
              }
            }
          }
          config.pci_functions = std::move(v);
        });
  apply("VROCE_PORT_EVENTS", "no scheduled port event", parse_port_events,
        [&](std::vector<PortEventSpec> v) {
          for (const PortEventSpec& event : v) {
            if (!is_device(event.device)) {
              errors->push_back("VROCE_PORT_EVENTS names " + event.device +
                                ", which is not a device of VROCE_DEVICES; keeping no scheduled "
                                "port event");
              return;
            }
          }
          config.port_events = std::move(v);
        });
  return config;
}

}  // namespace vroce
