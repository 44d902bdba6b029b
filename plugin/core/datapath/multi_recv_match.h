// Matching isends to the entries of a multi-receive (the sender's side of the CTS protocol).
//
// NCCL's rule: sends and receives on a comm match in posting order; within one irecv of n
// buffers, a send takes the first not-yet-matched entry that carries its tag. A send whose tag
// matches nothing in the oldest pending multi-receive belongs to a later one, so it cannot be
// posted yet (NCCL retries it). The group is posted to the network once all n entries are
// matched. Pure: unit-tested without a device.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/datapath/cts_ring.h"
#include "core/datapath/data_path_limits.h"

namespace roce {

class PendingMultiRecv {
 public:
  // Takes the n entries of a ready CTS slot (copied: read_cts_entry).
  void load(const CtsEntry* slot, int count) noexcept {
    count_ = count;
    matched_mask_ = 0;
    for (int i = 0; i < count; ++i) {
      entries_[static_cast<size_t>(i)] = read_cts_entry(&slot[i]);
    }
  }

  bool loaded() const noexcept { return count_ > 0; }
  // A recovery epoch rewrote the receive's entries (keys of another member): takes them, keeping
  // what is matched.
  void refresh(const CtsEntry* entries) noexcept {
    for (int i = 0; i < count_; ++i) {
      entries_[static_cast<size_t>(i)] = entries[i];
    }
  }
  const CtsEntry* entries() const noexcept { return entries_.data(); }
  void clear() noexcept { count_ = 0; }

  // Index of the first unmatched entry carrying `tag`, or -1.
  int find(int tag) const noexcept {
    for (int i = 0; i < count_; ++i) {
      if ((matched_mask_ & (1u << i)) == 0 && entries_[static_cast<size_t>(i)].tag == tag) {
        return i;
      }
    }
    return -1;
  }

  // Records that entry i is matched by send request `send_request` of `size` bytes.
  void match(int i, uint16_t send_request, uint32_t size) noexcept {
    matched_mask_ |= 1u << i;
    send_requests_[static_cast<size_t>(i)] = send_request;
    send_sizes_[static_cast<size_t>(i)] = size;
  }

  bool complete() const noexcept { return matched_mask_ == (1u << count_) - 1u; }

  int count() const noexcept { return count_; }
  const CtsEntry& entry(int i) const noexcept { return entries_[static_cast<size_t>(i)]; }
  uint16_t send_request(int i) const noexcept { return send_requests_[static_cast<size_t>(i)]; }
  uint32_t send_size(int i) const noexcept { return send_sizes_[static_cast<size_t>(i)]; }
  const std::array<uint32_t, kMaxRecvs>& send_sizes() const noexcept { return send_sizes_; }

 private:
  int count_ = 0;
  uint32_t matched_mask_ = 0;
  std::array<CtsEntry, kMaxRecvs> entries_{};
  std::array<uint16_t, kMaxRecvs> send_requests_{};
  std::array<uint32_t, kMaxRecvs> send_sizes_{};
};

}  // namespace roce
