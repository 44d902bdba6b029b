// MTU conversions and the RNR / ACK timer encodings (see mtu.h).
#include "wire/mtu.h"

#include <array>

#include "wire/opcode.h"

namespace vroce::wire {
namespace {

constexpr std::size_t kIpv4HeaderSize = 20;
constexpr std::size_t kIpv6HeaderSize = 40;
constexpr std::size_t kUdpHeaderSize = 8;
// The kernel's worst case for active_mtu: GRH (40) + UDP (8) + BTH (12) + AtomicETH (28) +
// XRC ETH (4) + ICRC (4).
constexpr std::uint32_t kKernelRoceOverhead = 96;

// IBA table of RNR NAK timer values in units of 10 us; code 0 (655.36 ms) comes last in the
// encoding but first here.
constexpr std::array<std::uint32_t, 32> kRnrTimerTenUs = {
    65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
    48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
    2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

}  // namespace

std::optional<std::uint32_t> mtu_bytes(int ibv_mtu_value) noexcept {
  if (ibv_mtu_value < IBV_MTU_256 || ibv_mtu_value > IBV_MTU_4096) {
    return std::nullopt;
  }
  return 128u << ibv_mtu_value;
}

std::optional<ibv_mtu> mtu_enum_from_bytes(std::uint32_t bytes) noexcept {
  for (int m = IBV_MTU_256; m <= IBV_MTU_4096; ++m) {
    if ((128u << m) == bytes) {
      return static_cast<ibv_mtu>(m);
    }
  }
  return std::nullopt;
}

std::optional<ibv_mtu> mtu_enum_floor(std::uint32_t bytes) noexcept {
  for (int m = IBV_MTU_4096; m >= IBV_MTU_256; --m) {
    if ((128u << m) <= bytes) {
      return static_cast<ibv_mtu>(m);
    }
  }
  return std::nullopt;
}

std::size_t roce_overhead(IpFamily family, std::size_t extension_header_bytes) noexcept {
  const std::size_t ip = family == IpFamily::V4 ? kIpv4HeaderSize : kIpv6HeaderSize;
  return ip + kUdpHeaderSize + kBthSize + extension_header_bytes + kIcrcSize;
}

std::size_t max_payload_for_netdev(std::uint32_t netdev_mtu, IpFamily family,
                                   std::size_t extension_header_bytes) noexcept {
  const std::size_t overhead = roce_overhead(family, extension_header_bytes);
  if (netdev_mtu <= overhead) {
    return 0;
  }
  // The payload plus its pad must fit, and pad rounds up to four bytes.
  return (netdev_mtu - overhead) & ~std::size_t{3};
}

std::optional<ibv_mtu> active_mtu_for_netdev(std::uint32_t netdev_mtu) noexcept {
  if (netdev_mtu < kKernelRoceOverhead) {
    return std::nullopt;
  }
  return mtu_enum_floor(netdev_mtu - kKernelRoceOverhead);
}

std::optional<std::chrono::microseconds> rnr_timer(unsigned code) noexcept {
  if (code >= kRnrTimerTenUs.size()) {
    return std::nullopt;
  }
  return std::chrono::microseconds(std::int64_t{kRnrTimerTenUs[code]} * 10);
}

unsigned rnr_timer_code_at_least(std::chrono::microseconds wait) noexcept {
  // Codes 1..31 increase; code 0 is the longest of all.
  for (unsigned code = 1; code < kRnrTimerTenUs.size(); ++code) {
    if (std::int64_t{kRnrTimerTenUs[code]} * 10 >= wait.count()) {
      return code;
    }
  }
  return 0;
}

std::optional<AckTimeout> local_ack_timeout(unsigned code) noexcept {
  if (code > 31) {
    return std::nullopt;
  }
  if (code == 0) {
    return AckTimeout{true, std::chrono::nanoseconds(0)};
  }
  return AckTimeout{false, std::chrono::nanoseconds(std::int64_t{4096} << code)};
}

}  // namespace vroce::wire
