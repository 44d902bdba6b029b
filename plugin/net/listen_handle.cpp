// Listen handle encoding, validation and nonce generation (see net/listen_handle.h).
#include "net/listen_handle.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "net/wire.h"
#include "util/errno_text.h"

namespace roce::net {
namespace {

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

void encode_listen_handle(const ListenHandle& handle, std::span<uint8_t> out) {
  std::vector<uint8_t> bytes;
  bytes.reserve(kListenHandleSize);
  ByteWriter writer(&bytes);
  writer.u32(kListenHandleMagic);
  writer.u8(kListenHandleVersion);
  writer.u8(handle.address.family() == AddressFamily::Ipv4 ? 4 : 6);
  writer.u8(handle.stage);
  writer.u8(0);
  writer.u16(handle.address.port());
  writer.u16(0);
  writer.bytes(handle.address.bytes());
  writer.u32(0);
  writer.u64(handle.nonce);
  bytes.resize(kListenHandleSize, 0);
  std::memcpy(out.data(), bytes.data(), std::min(out.size(), bytes.size()));
}

Result<ListenHandle> decode_listen_handle(std::span<const uint8_t> bytes) {
  const auto fail = [&](const std::string& why) {
    return failure("invalid listen handle: " + why);
  };
  if (bytes.size() < kListenHandleSize) {
    return fail(std::to_string(bytes.size()) + " bytes, at least " +
                std::to_string(kListenHandleSize) + " needed");
  }
  ByteReader reader(bytes.first(kListenHandleSize));
  uint32_t magic = 0;
  uint8_t version = 0;
  uint8_t family = 0;
  uint8_t stage = 0;
  uint8_t reserved8 = 0;
  uint16_t port = 0;
  uint16_t reserved16 = 0;
  std::array<uint8_t, 16> address{};
  uint32_t reserved32 = 0;
  uint64_t nonce = 0;
  std::array<uint8_t, 8> tail{};
  // The span holds kListenHandleSize bytes, so none of these reads can run short.
  reader.u32(&magic);
  reader.u8(&version);
  reader.u8(&family);
  reader.u8(&stage);
  reader.u8(&reserved8);
  reader.u16(&port);
  reader.u16(&reserved16);
  reader.bytes(address);
  reader.u32(&reserved32);
  reader.u64(&nonce);
  reader.bytes(tail);
  if (magic != kListenHandleMagic) {
    return fail("magic " + hex(magic) + ", expected " + hex(kListenHandleMagic) +
                " (the handle was not written by this plugin's listen(); is every rank "
                "running the same NCCL net plugin?)");
  }
  if (version != kListenHandleVersion) {
    return fail("format version " + std::to_string(version) + ", this plugin reads version " +
                std::to_string(kListenHandleVersion) +
                "; run the same nccl-net-roce version on every node");
  }
  if (family != 4 && family != 6) {
    return fail("address family " + std::to_string(family) + ", expected 4 or 6");
  }
  const bool tail_zero = std::all_of(tail.begin(), tail.end(), [](uint8_t b) { return b == 0; });
  const bool v4_padding_zero = family == 6 || std::all_of(address.begin() + 4, address.end(),
                                                          [](uint8_t b) { return b == 0; });
  if (reserved8 != 0 || reserved16 != 0 || reserved32 != 0 || !tail_zero || !v4_padding_zero) {
    return fail("reserved bytes are not zero (corrupted in transit?)");
  }
  if (port == 0) {
    return fail("port 0");
  }
  if (nonce == 0) {
    return fail("nonce 0");
  }
  ListenHandle handle;
  handle.address = SocketAddress::from_bytes(
      family == 4 ? AddressFamily::Ipv4 : AddressFamily::Ipv6, address, port);
  handle.nonce = nonce;
  handle.stage = stage;
  return handle;
}

Result<uint64_t> random_nonce() {
  uint64_t nonce = 0;
  while (nonce == 0) {
    const ssize_t got = getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK);
    if (got == static_cast<ssize_t>(sizeof(nonce))) {
      continue;
    }
    if (got < 0 && errno == EINTR) {
      continue;
    }
    return failure(std::string("getrandom failed: ") +
                   (got < 0 ? errno_text(errno) : std::string("short read")) +
                   " (the kernel's random pool is not ready, or getrandom is blocked by a seccomp "
                   "profile)");
  }
  return nonce;
}

}  // namespace roce::net
