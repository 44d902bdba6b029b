// The pure, environment-free half of vroce's configuration: one parser per variable, and
// parse_config(), which applies them to any variable lookup. config() (config.cpp) feeds it the
// process environment; unit tests feed it a map. Keeping the environment out of the parsers is
// what lets every accepted and rejected value be tested without setenv() races.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace vroce {

// Port speeds vroce can present as a ConnectX-style width x per-lane speed.
inline constexpr uint32_t kSupportedPortGbps[] = {100, 200, 400, 800};

Result<uint32_t> parse_port_speed_gbps(const std::string& text);
Result<double> parse_time_scale(const std::string& text);
Result<uint8_t> parse_traffic_class(const std::string& text);
Result<uint32_t> parse_stall_warn_ms(const std::string& text);
Result<uint32_t> parse_spin_us(const std::string& text);
// "1" -> true, "0" -> false (VROCE_GSO).
Result<bool> parse_gso(const std::string& text);
// "udp" -> false, "shm" -> true (VROCE_WIRE).
Result<bool> parse_wire(const std::string& text);
// "vroce" -> false, "connectx7" -> true.
Result<bool> parse_identity(const std::string& text);
// "helper" -> true, "in-process" -> false (VROCE_GPU_COPIES).
Result<bool> parse_gpu_copies(const std::string& text);
// "auto", "on", "off" (VROCE_GPU_COPY_KERNEL).
Result<GpuCopyKernel> parse_gpu_copy_kernel(const std::string& text);
// Bytes, 0 to 1 MiB (VROCE_GPU_COPY_KERNEL_MAX).
Result<uint32_t> parse_gpu_copy_kernel_max(const std::string& text);
// Milliseconds, 1 to 3600000 (VROCE_GPU_COPY_KERNEL_IDLE_MS).
Result<uint32_t> parse_gpu_copy_kernel_idle_ms(const std::string& text);
Result<std::string> parse_path(const std::string& text);
// "off" -> {false, 0}; "0x30000002" (hex, 0x optional) -> {true, options}.
struct EceSetting {
  bool enabled = true;
  uint32_t options = 0;
};
Result<EceSetting> parse_ece(const std::string& text);
// "0x0002c90300a1b2c3" (hex, 0x optional, non-zero).
Result<uint64_t> parse_guid(const std::string& text);

// The default device list used when VROCE_DEVICES is unset.
std::vector<DeviceSpec> default_device_specs();

// Returns the value of a variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// Builds a Config from the variables lookup() returns. A malformed variable keeps its default
// and adds one message to *errors naming the variable, the value and what is accepted.
Config parse_config(const EnvLookup& lookup, std::vector<std::string>* errors);

}  // namespace vroce
