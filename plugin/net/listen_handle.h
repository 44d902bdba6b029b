// The listen handle: what listen() writes into NCCL's opaque 128-byte handle and what connect()
// reads on the other rank. It names the listener's TCP endpoint and carries a random nonce that
// the listener requires in the first handshake message, so a stray or stale connection (an old
// handle, another job, a port scanner) is refused while the listener keeps listening.
//
// Layout (little-endian, kListenHandleSize bytes, the rest of NCCL's buffer untouched):
//   0 magic u32 | 4 version u8 | 5 family u8 (4 or 6) | 6 stage u8 | 7 reserved u8 (0)
//   8 port u16 | 10 reserved u16 (0) | 12 address [16] (IPv4 in the first 4, rest 0)
//   28 reserved u32 (0) | 32 nonce u64 (never 0) | 40 reserved [8] (0)
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "nccl_net/types.h"
#include "net/socket_address.h"
#include "roce/result.h"

namespace roce::net {

inline constexpr uint32_t kListenHandleMagic = 0x48436f52;  // "RoCH"
inline constexpr uint8_t kListenHandleVersion = 1;
inline constexpr size_t kListenHandleSize = 48;
static_assert(kListenHandleSize <= NCCL_NET_HANDLE_MAXSIZE,
              "the listen handle must fit NCCL's opaque handle buffer");

struct ListenHandle {
  SocketAddress address;  // the listener's endpoint, port included
  uint64_t nonce = 0;     // random, never 0
  // Free for the connecting side's use: NCCL hands connect() the same buffer on every retry,
  // so a connect state machine may record its stage here. listen() writes 0.
  uint8_t stage = 0;
};

// Writes kListenHandleSize bytes; `out` must hold at least that many.
void encode_listen_handle(const ListenHandle& handle, std::span<uint8_t> out);

// Reads and validates a handle; a defect fails with its name (short buffer, wrong magic, other
// version, bad family, port 0, nonce 0, reserved bytes set).
Result<ListenHandle> decode_listen_handle(std::span<const uint8_t> bytes);

// A non-zero 64-bit nonce from getrandom(2) (never blocking: GRND_NONBLOCK); fails when the
// kernel cannot supply randomness.
Result<uint64_t> random_nonce();

}  // namespace roce::net
