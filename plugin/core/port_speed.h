// Port speed in Mb/s (what NCCL's getProperties wants) from the IB speed and width codes of
// ibv_port_attr, which RoCE ports report too. Pure tables, unit-tested.
//
// Speed codes (per lane): 1 SDR 2.5G, 2 DDR 5G, 4 QDR 10G, 8 FDR10 10G, 16 FDR 14G, 32 EDR 25G,
// 64 HDR 50G, 128 NDR 100G, and 256 XDR 200G, which needs active_speed_ex (rdma-core 50+).
// Width codes: 1 1X, 2 4X, 4 8X, 8 12X, 16 2X.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace roce {

std::optional<int> lane_speed_mbps(uint32_t speed_code) noexcept;
std::optional<int> lane_count(uint32_t width_code) noexcept;
// Lane speed x lane count; std::nullopt when either code is unknown.
std::optional<int> port_speed_mbps(uint32_t speed_code, uint32_t width_code) noexcept;
// "4X NDR (400 Gb/s)"; unknown codes are shown as numbers.
std::string describe_port_speed(uint32_t speed_code, uint32_t width_code);

}  // namespace roce
