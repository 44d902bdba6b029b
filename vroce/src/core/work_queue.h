// The send and receive queues of a QP: rings of work requests that application threads fill
// (ibv_post_send / ibv_post_recv) and the progress thread drains. Slots, their SGE arrays and the
// inline-data buffers are allocated once at QP creation, so posting never allocates. Producers
// serialise on a mutex that is never held across a syscall; the progress thread reads up to the
// published tail (acquire) and hands slots back by advancing the free index (release).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace vroce::core {

struct SendWqe {
  // Copied from the ibv_send_wr at post time.
  uint64_t wr_id = 0;
  ibv_wr_opcode opcode = IBV_WR_SEND;
  unsigned send_flags = 0;  // with IBV_SEND_SIGNALED already folded in for sq_sig_all
  uint32_t imm_be = 0;      // imm_data, big-endian as verbs keeps it
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t num_sge = 0;  // 0 for inline data
  uint64_t length = 0;   // total bytes of the message
  bool is_inline = false;

  // Progress-thread state, reset when the WQE is first started.
  uint32_t first_psn = 0;  // PSN of its first packet
  uint32_t psn_count = 0;  // PSNs it uses (a READ reserves one per response packet)
  uint32_t done_psns = 0;  // READ: response packets received in order
  bool started = false;
};

struct RecvWqe {
  uint64_t wr_id = 0;
  uint32_t num_sge = 0;
  uint64_t length = 0;
};

class SendQueue {
 public:
  // Sizes the ring to the next power of two >= max_wr (and >= 1).
  void init(uint32_t max_wr, uint32_t max_sge, uint32_t max_inline);

  uint32_t capacity() const noexcept { return capacity_; }
  uint32_t max_sge() const noexcept { return max_sge_; }
  uint32_t max_inline() const noexcept { return max_inline_; }

  SendWqe& wqe(uint32_t index) noexcept { return wqes_[index & mask_]; }
  ibv_sge* sges(uint32_t index) noexcept {
    return &sges_[static_cast<size_t>(index & mask_) * max_sge_];
  }
  uint8_t* inline_data(uint32_t index) noexcept {
    return inline_.data() + static_cast<size_t>(index & mask_) * max_inline_;
  }

  std::mutex post_mutex;               // serialises producers
  std::atomic<uint32_t> tail{0};       // next slot producers fill (free-running)
  std::atomic<uint32_t> free_head{0};  // slots before this are free again (progress thread)

 private:
  uint32_t capacity_ = 0;
  uint32_t mask_ = 0;
  uint32_t max_sge_ = 0;
  uint32_t max_inline_ = 0;
  std::vector<SendWqe> wqes_;
  std::vector<ibv_sge> sges_;
  std::vector<uint8_t> inline_;
};

class RecvQueue {
 public:
  void init(uint32_t max_wr, uint32_t max_sge);

  uint32_t capacity() const noexcept { return capacity_; }
  uint32_t max_sge() const noexcept { return max_sge_; }

  RecvWqe& wqe(uint32_t index) noexcept { return wqes_[index & mask_]; }
  ibv_sge* sges(uint32_t index) noexcept {
    return &sges_[static_cast<size_t>(index & mask_) * max_sge_];
  }

  std::mutex post_mutex;
  std::atomic<uint32_t> tail{0};  // next slot producers fill
  std::atomic<uint32_t> head{0};  // next WQE the progress thread consumes; earlier slots are free

 private:
  uint32_t capacity_ = 0;
  uint32_t mask_ = 0;
  uint32_t max_sge_ = 0;
  std::vector<RecvWqe> wqes_;
  std::vector<ibv_sge> sges_;
};

}  // namespace vroce::core
