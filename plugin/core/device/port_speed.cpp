// Speed and width code tables: see port_speed.h.
#include "core/device/port_speed.h"

#include <fmt/format.h>

namespace roce {
namespace {

struct SpeedCode {
  uint32_t code;
  int lane_mbps;
  const char* name;
};

constexpr SpeedCode kSpeeds[] = {
    {1, 2500, "SDR"},    {2, 5000, "DDR"},     {4, 10000, "QDR"},
    {8, 10000, "FDR10"}, {16, 14000, "FDR"},   {32, 25000, "EDR"},
    {64, 50000, "HDR"},  {128, 100000, "NDR"}, {256, 200000, "XDR"},
};

struct WidthCode {
  uint32_t code;
  int lanes;
};

constexpr WidthCode kWidths[] = {{1, 1}, {2, 4}, {4, 8}, {8, 12}, {16, 2}};

const SpeedCode* find_speed(uint32_t code) noexcept {
  for (const auto& entry : kSpeeds) {
    if (entry.code == code) {
      return &entry;
    }
  }
  return nullptr;
}

// The entry for the lowest bit of `code` that is one of the table's codes, else the last entry.
template <typename Entry, size_t N>
const Entry& lowest_known_bit(const Entry (&table)[N], uint32_t code) noexcept {
  for (uint32_t bit = 1; bit != 0; bit <<= 1) {
    if ((code & bit) == 0) {
      continue;
    }
    for (const Entry& entry : table) {
      if (entry.code == bit) {
        return entry;
      }
    }
  }
  return table[N - 1];
}

}  // namespace

int clamped_port_speed_mbps(uint32_t speed_code, uint32_t width_code) noexcept {
  return lowest_known_bit(kSpeeds, speed_code).lane_mbps *
         lowest_known_bit(kWidths, width_code).lanes;
}

std::optional<int> lane_speed_mbps(uint32_t speed_code) noexcept {
  const SpeedCode* entry = find_speed(speed_code);
  if (entry == nullptr) {
    return std::nullopt;
  }
  return entry->lane_mbps;
}

std::optional<int> lane_count(uint32_t width_code) noexcept {
  for (const auto& entry : kWidths) {
    if (entry.code == width_code) {
      return entry.lanes;
    }
  }
  return std::nullopt;
}

std::optional<int> port_speed_mbps(uint32_t speed_code, uint32_t width_code) noexcept {
  const auto lane = lane_speed_mbps(speed_code);
  const auto lanes = lane_count(width_code);
  if (!lane || !lanes) {
    return std::nullopt;
  }
  return *lane * *lanes;
}

std::string describe_port_speed(uint32_t speed_code, uint32_t width_code) {
  const SpeedCode* speed = find_speed(speed_code);
  const auto lanes = lane_count(width_code);
  const std::string width_text =
      lanes ? fmt::format("{}X", *lanes) : fmt::format("width code {}", width_code);
  const std::string speed_text =
      speed != nullptr ? std::string(speed->name) : fmt::format("speed code {}", speed_code);
  const auto total = port_speed_mbps(speed_code, width_code);
  if (!total) {
    return fmt::format("{} {} (unknown rate)", width_text, speed_text);
  }
  return fmt::format("{} {} ({:g} Gb/s)", width_text, speed_text,
                     static_cast<double>(*total) / 1000.0);
}

}  // namespace roce
