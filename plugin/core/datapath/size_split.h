// Splitting one message over the data QPs of a connection. Every QP but possibly the last gets
// the same chunk, rounded up to kChunkAlignment bytes so NCCL's 128-byte LL/LL128 lines never
// straddle two QPs; trailing QPs may get nothing (they still carry their WRITE WITH IMMEDIATE).
// Pure: unit-tested without a device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/datapath/data_path_limits.h"

namespace roce {

struct Chunk {
  size_t offset = 0;
  size_t length = 0;
};

// NCCL_IB_SPLIT_DATA_ON_QPS=0: the one QP that carries message `seq` (the CTS sequence number,
// which both sides count alike, from 1), so the QPs are used in turn and the receiver matches a
// QP's receive completions to the messages it carries.
constexpr int qp_of_message(uint64_t seq, int nqps) noexcept {
  return nqps <= 1 ? 0 : static_cast<int>(seq % static_cast<uint64_t>(nqps));
}

// The inverse for the receiver: the first message (sequence >= 1) that qp_of_message puts on QP
// `qp`; the next ones follow every nqps.
constexpr uint64_t first_message_of_qp(int qp, int nqps) noexcept {
  if (nqps <= 1) {
    return 1;
  }
  return qp == 0 ? static_cast<uint64_t>(nqps) : static_cast<uint64_t>(qp);
}

// NCCL_IB_SPLIT_DATA_ON_QPS=1: the part of a `size`-byte message that QP `qp` of `nqps` carries.
constexpr Chunk chunk_for_qp(size_t size, int qp, int nqps) noexcept {
  if (nqps <= 1) {
    return Chunk{0, size};
  }
  const size_t n = static_cast<size_t>(nqps);
  size_t chunk = (size + n - 1) / n;
  chunk = (chunk + kChunkAlignment - 1) / kChunkAlignment * kChunkAlignment;
  const size_t begin = chunk * static_cast<size_t>(qp);
  if (begin >= size) {
    return Chunk{size, 0};
  }
  const size_t end = begin + chunk < size ? begin + chunk : size;
  return Chunk{begin, end - begin};
}

}  // namespace roce
