// CRC-32 as zlib and Ethernet define it (polynomial 0x04C11DB7, reflected, initial value and final
// xor 0xFFFFFFFF), which is the CRC the RoCEv2 ICRC uses. Three implementations that must agree
// bit for bit: a bitwise reference (the definition, for tests), slicing-by-8 (portable) and
// PCLMULQDQ folding (x86-64 with PCLMUL, about ten times faster); crc32_update picks the fastest
// one the CPU supports, once.
//
// Incremental use: the state starts at kCrc32Init, crc32_update feeds pieces in order, and
// crc32_final turns the state into the CRC value. So a packet assembled from a header buffer and
// payload pieces is checksummed without copying it together first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace vroce::wire {

inline constexpr std::uint32_t kCrc32Init = 0xFFFFFFFFu;
// The reflected form of the generator polynomial 0x04C11DB7.
inline constexpr std::uint32_t kCrc32PolyReflected = 0xEDB88320u;

constexpr std::uint32_t crc32_final(std::uint32_t state) noexcept {
  return ~state;
}

// Feeds bytes into a running state; uses the fastest implementation this CPU supports.
std::uint32_t crc32_update(std::uint32_t state, const void* data, std::size_t len) noexcept;
inline std::uint32_t crc32_update(std::uint32_t state,
                                  std::span<const std::uint8_t> bytes) noexcept {
  return crc32_update(state, bytes.data(), bytes.size());
}

// One-shot CRC-32 of a buffer (equal to zlib's crc32(0, data, len)).
inline std::uint32_t crc32(std::span<const std::uint8_t> bytes) noexcept {
  return crc32_final(crc32_update(kCrc32Init, bytes));
}

// The individual implementations, for tests and benchmarks. crc32_update_pclmul must only be
// called when crc32_pclmul_supported() is true.
std::uint32_t crc32_update_bitwise(std::uint32_t state, const std::uint8_t* data,
                                   std::size_t len) noexcept;
std::uint32_t crc32_update_slicing8(std::uint32_t state, const std::uint8_t* data,
                                    std::size_t len) noexcept;
std::uint32_t crc32_update_pclmul(std::uint32_t state, const std::uint8_t* data,
                                  std::size_t len) noexcept;
bool crc32_pclmul_supported() noexcept;

// "pclmul" or "slicing-by-8": what crc32_update uses on this machine.
std::string_view crc32_implementation() noexcept;

}  // namespace vroce::wire
