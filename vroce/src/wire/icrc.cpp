// ICRC computation over reconstructed (socket path) or captured IP/UDP headers (see icrc.h).
#include "wire/icrc.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

#include "wire/byte_order.h"
#include "wire/opcode.h"

namespace vroce::wire {
namespace {

constexpr std::size_t kPseudoLrhSize = 8;
constexpr std::size_t kIpv4HeaderSize = 20;
constexpr std::size_t kIpv6HeaderSize = 40;
constexpr std::size_t kUdpHeaderSize = 8;

// Masks the variant fields of an IPv4 or IPv6 header in place.
void mask_ip_header(IpFamily family, std::uint8_t* ip) noexcept {
  if (family == IpFamily::V4) {
    ip[1] = 0xFF;   // TOS (DSCP, ECN)
    ip[8] = 0xFF;   // TTL
    ip[10] = 0xFF;  // header checksum
    ip[11] = 0xFF;
  } else {
    ip[0] |= 0x0F;  // traffic class (high nibble) ...
    ip[1] = 0xFF;   // ... traffic class (low nibble) and flow label
    ip[2] = 0xFF;
    ip[3] = 0xFF;
    ip[7] = 0xFF;  // hop limit
  }
}

// The ID delta of one bit of the IPv4 ID: the raw CRC of the covered bytes (pseudo-LRH, IPv4 and
// UDP headers, UDP payload less the ICRC) with every byte zero except that bit of the ID.
std::uint32_t id_bit_delta(std::size_t udp_payload_len, unsigned bit) noexcept {
  constexpr std::size_t kIdOffset = kPseudoLrhSize + 4;
  std::array<std::uint8_t, kIdOffset + 2> head{};
  store_be16(head.data() + kIdOffset, static_cast<std::uint16_t>(1u << bit));
  std::uint32_t s = crc32_update(0, head.data(), head.size());
  static constexpr std::array<std::uint8_t, 4096> kZeros{};
  std::size_t rest = kIpv4HeaderSize - 6 + kUdpHeaderSize + udp_payload_len - kIcrcSize;
  while (rest > 0) {
    const std::size_t n = std::min(rest, kZeros.size());
    s = crc32_update(s, kZeros.data(), n);
    rest -= n;
  }
  return s;
}

// Direct-mapped by (length, bit); a slot holds (length + 1) << 36 | bit << 32 | delta, 0 when
// empty. Threads that race on a slot only compute the same value twice.
constexpr std::size_t kDeltaSlots = 1024;
std::atomic<std::uint64_t> delta_cache[kDeltaSlots];

std::uint32_t cached_id_bit_delta(std::size_t udp_payload_len, unsigned bit) noexcept {
  if (udp_payload_len > 0xFFFF) {
    return id_bit_delta(udp_payload_len, bit);
  }
  const std::uint64_t tag = (std::uint64_t{udp_payload_len} + 1) << 36 | std::uint64_t{bit} << 32;
  std::atomic<std::uint64_t>& slot = delta_cache[(udp_payload_len * 16 + bit) % kDeltaSlots];
  const std::uint64_t held = slot.load(std::memory_order_relaxed);
  if ((held & ~std::uint64_t{0xFFFFFFFF}) == tag) {
    return static_cast<std::uint32_t>(held);
  }
  const std::uint32_t delta = id_bit_delta(udp_payload_len, bit);
  slot.store(tag | delta, std::memory_order_relaxed);
  return delta;
}

}  // namespace

std::uint32_t icrc_ipv4_id_delta(std::size_t udp_payload_len, std::uint16_t id) noexcept {
  std::uint32_t delta = 0;
  for (unsigned bit = 0; id != 0; ++bit, id = static_cast<std::uint16_t>(id >> 1)) {
    if ((id & 1) != 0) {
      delta ^= cached_id_bit_delta(udp_payload_len, bit);
    }
  }
  return delta;
}

bool icrc_matches_burst_id(std::size_t udp_payload_len, std::uint32_t computed,
                           std::uint32_t stored) noexcept {
  static_assert(kMaxBurstSegments == 8, "the IDs 1..7 are the combinations of three bits");
  const std::uint32_t difference = computed ^ stored;
  const std::uint32_t bit0 = cached_id_bit_delta(udp_payload_len, 0);
  const std::uint32_t bit1 = cached_id_bit_delta(udp_payload_len, 1);
  const std::uint32_t bit2 = cached_id_bit_delta(udp_payload_len, 2);
  return difference == bit0 || difference == bit1 || difference == (bit0 ^ bit1) ||
         difference == bit2 || difference == (bit2 ^ bit0) || difference == (bit2 ^ bit1) ||
         difference == (bit2 ^ bit1 ^ bit0);
}

std::uint32_t icrc_begin(const FlowAddress& flow, std::size_t udp_payload_len) noexcept {
  std::array<std::uint8_t, kPseudoLrhSize + kIpv6HeaderSize + kUdpHeaderSize> buf;
  std::fill_n(buf.data(), kPseudoLrhSize, std::uint8_t{0xFF});
  std::uint8_t* ip = buf.data() + kPseudoLrhSize;
  const std::size_t udp_len = kUdpHeaderSize + udp_payload_len;
  std::size_t ip_size;
  if (flow.family == IpFamily::V4) {
    ip_size = kIpv4HeaderSize;
    ip[0] = 0x45;
    ip[1] = 0;
    store_be16(ip + 2, static_cast<std::uint16_t>(kIpv4HeaderSize + udp_len));
    store_be16(ip + 4, 0);       // ID: 0 for an unconnected socket with DF set
    store_be16(ip + 6, 0x4000);  // flags DF, fragment offset 0
    ip[8] = 0;
    ip[9] = 17;  // UDP
    store_be16(ip + 10, 0);
    std::memcpy(ip + 12, flow.src_ip.data(), 4);
    std::memcpy(ip + 16, flow.dst_ip.data(), 4);
  } else {
    ip_size = kIpv6HeaderSize;
    store_be32(ip, 0x60000000u);
    store_be16(ip + 4, static_cast<std::uint16_t>(udp_len));
    ip[6] = 17;  // next header: UDP
    ip[7] = 0;
    std::memcpy(ip + 8, flow.src_ip.data(), 16);
    std::memcpy(ip + 24, flow.dst_ip.data(), 16);
  }
  mask_ip_header(flow.family, ip);
  std::uint8_t* udp = ip + ip_size;
  store_be16(udp, flow.src_port);
  store_be16(udp + 2, flow.dst_port);
  store_be16(udp + 4, static_cast<std::uint16_t>(udp_len));
  store_be16(udp + 6, 0xFFFF);  // checksum, masked
  return crc32_update(kCrc32Init, buf.data(), kPseudoLrhSize + ip_size + kUdpHeaderSize);
}

std::uint32_t IcrcHeaderCache::begin(const FlowAddress& flow,
                                     std::size_t udp_payload_len) noexcept {
  // The fields that tell a host's flows apart: length, ports and the addresses' last bytes (the
  // IPv4 ones, or the IPv6 ones at byte 15), mixed so that each lands in the top bits.
  const std::size_t last = flow.family == IpFamily::V4 ? 3 : 15;
  const std::uint32_t ports = std::uint32_t{flow.src_port} << 16 | flow.dst_port;
  const std::uint32_t ends = std::uint32_t{flow.src_ip[last]} << 8 | flow.dst_ip[last];
  const std::uint32_t h = static_cast<std::uint32_t>(udp_payload_len) * 0x9E3779B1u ^
                          ports * 0x85EBCA77u ^ ends * 0xC2B2AE3Du;
  Set& set = sets_[(h >> 28) % kSets];
  for (Slot& slot : set.ways) {
    if (slot.length == udp_payload_len && slot.flow == flow) {
      return slot.state;
    }
  }
  Slot& slot = set.ways[set.next];
  set.next = (set.next + 1) % kWays;
  ++misses_;
  slot.flow = flow;
  slot.length = udp_payload_len;
  slot.state = icrc_begin(flow, udp_payload_len);
  return slot.state;
}

std::uint32_t icrc_update_bth(std::uint32_t state, const std::uint8_t* bth) noexcept {
  std::array<std::uint8_t, kBthSize> masked;
  std::memcpy(masked.data(), bth, kBthSize);
  masked[4] = 0xFF;
  return crc32_update(state, masked.data(), masked.size());
}

std::optional<std::uint32_t> icrc_compute(const FlowAddress& flow,
                                          std::span<const std::uint8_t> udp_payload) noexcept {
  if (udp_payload.size() < kBthSize + kIcrcSize) {
    return std::nullopt;
  }
  std::uint32_t s = icrc_begin(flow, udp_payload.size());
  s = icrc_update_bth(s, udp_payload.data());
  s = icrc_update(s, udp_payload.subspan(kBthSize, udp_payload.size() - kBthSize - kIcrcSize));
  return icrc_final(s);
}

std::uint32_t icrc_stored(std::span<const std::uint8_t> udp_payload) noexcept {
  if (udp_payload.size() < kIcrcSize) {
    return 0;
  }
  return load_le32(udp_payload.data() + udp_payload.size() - kIcrcSize);
}

bool icrc_valid(const FlowAddress& flow, std::span<const std::uint8_t> udp_payload) noexcept {
  const auto computed = icrc_compute(flow, udp_payload);
  return computed && *computed == icrc_stored(udp_payload);
}

std::optional<std::uint32_t> icrc_compute_captured(const IpUdpView& packet) noexcept {
  const auto payload = packet.udp_payload;
  if (payload.size() < kBthSize + kIcrcSize) {
    return std::nullopt;
  }
  const std::size_t ip_size = packet.family == IpFamily::V4 ? kIpv4HeaderSize : kIpv6HeaderSize;
  if (packet.ip_header.size() != ip_size || packet.udp_header.size() != kUdpHeaderSize) {
    return std::nullopt;
  }
  std::array<std::uint8_t, kPseudoLrhSize + kIpv6HeaderSize + kUdpHeaderSize> buf;
  std::fill_n(buf.data(), kPseudoLrhSize, std::uint8_t{0xFF});
  std::uint8_t* ip = buf.data() + kPseudoLrhSize;
  std::memcpy(ip, packet.ip_header.data(), ip_size);
  mask_ip_header(packet.family, ip);
  std::uint8_t* udp = ip + ip_size;
  std::memcpy(udp, packet.udp_header.data(), kUdpHeaderSize);
  store_be16(udp + 6, 0xFFFF);
  std::uint32_t s = crc32_update(kCrc32Init, buf.data(), kPseudoLrhSize + ip_size + kUdpHeaderSize);
  s = icrc_update_bth(s, payload.data());
  s = icrc_update(s, payload.subspan(kBthSize, payload.size() - kBthSize - kIcrcSize));
  return icrc_final(s);
}

}  // namespace vroce::wire
