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
// NCCL's reading of the codes, which never gives 0: each code is taken by its lowest set bit
// among the table's codes, and a code with none of them (a newer speed, or garbage) counts as
// the table's last entry (XDR, 2X). So a NIC newer than this table is modelled at the highest
// known rate instead of NCCL's 10 Gb/s default for a speed of 0.
int clamped_port_speed_mbps(uint32_t speed_code, uint32_t width_code) noexcept;
// "4X NDR (400 Gb/s)"; unknown codes are shown as numbers.
std::string describe_port_speed(uint32_t speed_code, uint32_t width_code);

}  // namespace roce
