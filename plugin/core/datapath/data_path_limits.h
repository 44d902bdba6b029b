// The fixed dimensions of the data path, in one place, so that pools, rings and work-request
// arrays are sized at compile time and the invariants between them are checked by the compiler.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_net/types.h"

namespace roce {

// Receives grouped in one irecv (ncclNetProperties.maxRecvs). NCCL's shared comms aggregate up to
// this many peers into one multi-receive.
inline constexpr int kMaxRecvs = 8;

// Requests in flight per comm (NCCL_NET_MAX_REQUESTS). A send comm holds kMaxRequests x kMaxRecvs
// send requests, because every entry of a multi-receive is matched by its own isend.
inline constexpr int kMaxRequests = NCCL_NET_MAX_REQUESTS;
inline constexpr int kMaxSendRequests = kMaxRequests * kMaxRecvs;

// Queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION accepts 1..128, NCCL's range; the QP
// index fits the wr_id's 8 bits and a request's uint8_t completion count).
inline constexpr int kMaxQpsPerConnection = 128;

// Slots of the clear-to-send ring in the sender's memory. A receiver reuses slot s only for its
// (s + kCtsRingSlots)-th irecv, which it cannot post before the receive that used the slot last
// has completed (at most kMaxRequests receives are outstanding), and that receive completed only
// after the sender consumed the slot. So kMaxRequests slots suffice; the power of two keeps the
// slot computation a mask.
inline constexpr uint32_t kCtsRingSlots = 64;
static_assert((kCtsRingSlots & (kCtsRingSlots - 1)) == 0, "ring size must be a power of two");
static_assert(kCtsRingSlots >= static_cast<uint32_t>(kMaxRequests),
              "a slot could be overwritten before the sender consumed it");

// Large messages are split over the data QPs in chunks of this alignment, so that LL/LL128 lines
// (NCCL's 128-byte units) never straddle two QPs.
inline constexpr size_t kChunkAlignment = 128;

// The largest message, send or receive. test() reports received sizes as int and the immediate
// that carries a size is 32 bits, so the limit must stay below 2^31; 1 GiB is also what NCCL
// assumes for v8 plugins.
inline constexpr size_t kMaxMessageBytes = size_t{1} << 30;

// The immediate of a WRITE WITH IMMEDIATE is a message's size (one receive) or its count n
// (a multi-receive). With this bit set it is a refusal instead: the sender matched an isend
// larger than its receive buffer, refused it, and tells the receiver, whose request fails with
// both sizes rather than waiting forever for data that will not come. The other 31 bits hold
// the refused isend's size (at most kMaxMessageBytes). The notice carries no data.
inline constexpr uint32_t kRefusedSendImm = uint32_t{1} << 31;
inline constexpr uint32_t kRefusedSendSizeMask = kRefusedSendImm - 1;
static_assert(kMaxMessageBytes <= kRefusedSendSizeMask,
              "a message size must never look like a refusal");

// A recovery epoch's "already complete" marker (docs/design.md, "Recovery epochs"): a zero-length
// WRITE WITH IMMEDIATE in the place of a message the receiver had completed before the epoch, so
// that every new QP carries every sequence of its stride. No size (at most kMaxMessageBytes), no
// count (at most kMaxRecvs) and no refusal (kRefusedSendImm | a size) can be all ones.
inline constexpr uint32_t kAlreadyCompleteImm = UINT32_MAX;
static_assert((kRefusedSendImm | kMaxMessageBytes) < kAlreadyCompleteImm,
              "a refusal must never look like a marker");

// Receives are posted ahead of the irecvs, kPrePostedRecvs per data QP at connection, and given
// back in batches of kRecvRepostBatch as their completions are handled. At any time at most
// kRecvRepostBatch - 1 handled ones wait to be posted again, and the sender has at most
// kMaxRequests messages in flight (one per clear-to-send), so a receive is always there for them.
inline constexpr uint32_t kRecvRepostBatch = 16;
inline constexpr uint32_t kPrePostedRecvs = kMaxRequests + kRecvRepostBatch;

// Completions drained from a CQ per poll call.
inline constexpr int kPollBatch = 16;
// The receiver signals a clear-to-send write at least this often, so that its send-queue
// entries come back.
inline constexpr uint32_t kCtsSignalInterval = 16;

}  // namespace roce
