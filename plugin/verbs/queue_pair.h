// A reliable-connected queue pair (ibv_qp) and its state transitions. It holds its protection
// domain and both completion queues. Transitions check their attributes first (qp_attributes.h)
// and report failures with the QP number, the transition, every attribute and errno by name;
// to_rtr() reads the traffic class back and refuses a QP whose class is not the one requested.
//
// Teardown (destructor): the QP moves to ERR, so the device flushes every outstanding work
// request; marker requests posted after that tell when the flush is complete; then it is
// destroyed. Completions of other QPs read from a shared CQ meanwhile are kept for that CQ's next
// poll(). So destroy a QP on the thread that polls its CQs (see completion_queue.h).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "verbs/completion_queue.h"
#include "verbs/protection_domain.h"
#include "verbs/qp_attributes.h"

namespace roce::verbs {

struct QpCapabilities {
  uint32_t max_send_wr = 512;
  uint32_t max_recv_wr = 256;
  uint32_t max_send_sge = 1;
  uint32_t max_recv_sge = 1;
  uint32_t max_inline_data = 0;
};

class QueuePair {
 public:
  // An RC QP in RESET. Throws VerbsError naming the device, the capabilities asked for and the
  // device's limits.
  static std::unique_ptr<QueuePair> create_rc(std::shared_ptr<ProtectionDomain> pd,
                                              std::shared_ptr<CompletionQueue> send_cq,
                                              std::shared_ptr<CompletionQueue> recv_cq,
                                              const QpCapabilities& caps);
  ~QueuePair();
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  ibv_qp* get() const noexcept { return qp_; }
  uint32_t qp_num() const noexcept { return qp_->qp_num; }
  // The state as this object last set it (ERR also when a transition was refused mid-way).
  ibv_qp_state state() const noexcept { return state_; }
  // What the device granted (at least what was asked for).
  const QpCapabilities& capabilities() const noexcept { return caps_; }
  uint8_t port() const noexcept { return port_; }
  const std::shared_ptr<ProtectionDomain>& pd() const noexcept { return pd_; }
  const std::shared_ptr<CompletionQueue>& send_cq() const noexcept { return send_cq_; }
  const std::shared_ptr<CompletionQueue>& recv_cq() const noexcept { return recv_cq_; }

  // Each throws VerbsError; on failure the QP keeps its previous state.
  void to_init(const InitAttributes& attrs);
  void to_rtr(const RtrAttributes& attrs);  // also verifies the traffic class (see above)
  void to_rts(const RtsAttributes& attrs);
  void to_error();

  // The GRH traffic class the device holds for this QP (ibv_query_qp). Throws VerbsError.
  uint8_t query_traffic_class() const;

  // ECE (ibv_query_ece / ibv_set_ece, IBVERBS_1.10), as NCCL's wrappers treat them: std::nullopt
  // / false when the library lacks the entry point or the provider answers EOPNOTSUPP (ECE not
  // supported); any other failure throws VerbsError.
  std::optional<ibv_ece> query_ece() const;
  bool set_ece(const ibv_ece& ece);

  // Data path: straight through the ops table. Return 0 or an errno value (*bad set).
  int post_send(ibv_send_wr* wr, ibv_send_wr** bad) noexcept {
    return qp_->context->ops.post_send(qp_, wr, bad);
  }
  int post_recv(ibv_recv_wr* wr, ibv_recv_wr** bad) noexcept {
    return qp_->context->ops.post_recv(qp_, wr, bad);
  }

  // Set by the async-event thread (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR); read by the data path.
  void mark_fatal(ibv_event_type event) noexcept {
    fatal_event_.store(static_cast<int>(event), std::memory_order_release);
  }
  bool has_fatal_event() const noexcept {
    return fatal_event_.load(std::memory_order_acquire) >= 0;
  }
  std::optional<ibv_event_type> fatal_event() const noexcept;

  // Free for the owner (the comm that uses this QP); this layer never touches it.
  void* user_context = nullptr;

  // The QueuePair behind an ibv_qp this layer created (through qp_context), else nullptr.
  static QueuePair* from_ibv(const ibv_qp* qp) noexcept;

 private:
  QueuePair(std::shared_ptr<ProtectionDomain> pd, std::shared_ptr<CompletionQueue> send_cq,
            std::shared_ptr<CompletionQueue> recv_cq, ibv_qp* qp, const QpCapabilities& caps);
  void modify(ibv_qp_attr& attr, int mask, ibv_qp_state to, const std::string& attributes);
  [[noreturn]] void fail(ibv_qp_state to, const std::string& what, int err) const;
  void drain() noexcept;

  static constexpr uint64_t kMagic = 0x726f63652d717021;  // "roce-qp!"
  uint64_t magic_ = kMagic;
  std::shared_ptr<ProtectionDomain> pd_;
  std::shared_ptr<CompletionQueue> send_cq_;
  std::shared_ptr<CompletionQueue> recv_cq_;
  ibv_qp* qp_;
  QpCapabilities caps_;
  DeviceLimits limits_;
  ibv_qp_state state_ = IBV_QPS_RESET;
  uint8_t port_ = 0;
  std::atomic<int> fatal_event_{-1};
  // Their addresses are the wr_ids of the drain markers: no other request can carry them.
  char send_marker_ = 0;
  char recv_marker_ = 0;
};

}  // namespace roce::verbs
