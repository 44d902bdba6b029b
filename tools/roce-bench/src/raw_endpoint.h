// The point-to-point Endpoint directly on verbs, without the plugin: one RC queue pair per peer,
// each message one RDMA WRITE WITH IMMEDIATE into the peer's receive slot (addresses and rkeys
// exchanged once at setup), inline when small, every send signaled, receives as zero-SGE receive
// WQEs. This is the least work a verbs transport can do per message: the floor the plugin is
// compared with.
//
// With --raw-cts it runs the protocol the plugin and NCCL's IB transport share instead: each
// receive also writes a clear-to-send (the plugin's 32-byte CtsEntry: address, size, rkey and
// sequence) into the sender's ring with one RDMA WRITE, unsignaled but every 16th, and the sender
// writes a message only once it has read its clear-to-send, to the address that carries. That
// is the floor of the protocol: what any implementation of it pays, with nothing else added.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/datapath/cts_ring.h"
#include "endpoint.h"
#include "ibv/library.h"
#include "options.h"

namespace roce::bench {

class Rendezvous;

// Device and GID selection for the raw path.
struct RawDeviceChoice {
  std::string name;  // empty: the first device with an active port
  bool exact = true;
  int port = 1;
};
// Parses --hca, else a single-entry NCCL_IB_HCA ("=vroce1", "mlx5_0:1"). Multi-entry or
// exclusion lists are refused with a hint to pass --hca.
RawDeviceChoice choose_raw_device(const std::string& hca_option, const char* nccl_ib_hca);

class RawEndpoint final : public Endpoint {
 public:
  // Collective: both ranks construct it together.
  RawEndpoint(Rendezvous& rendezvous, const Options& options, std::size_t capacity);
  ~RawEndpoint() override;

  std::string_view label() const override { return "raw"; }
  std::size_t capacity() const override { return capacity_; }
  Buffer& send_buffer() override { return send_buffer_; }
  Buffer& recv_buffer() override { return recv_buffer_; }
  bool post_send(int slot, std::size_t bytes, Ticket& ticket) override;
  bool post_recv(int slot, std::size_t bytes, Ticket& ticket) override;
  bool test(Ticket& ticket) override;
  // Without a clear-to-send: deep enough that a sender limited to the window never outruns the
  // posted receives, whatever the receiver's polling lag. With one: the window, as the plugin.
  int receive_depth(int window) const override { return cts_ ? window : kReceiveDepth; }
  static constexpr int kReceiveDepth = 512;
  // Every this many clear-to-send writes, one is signaled, so that its completion retires the
  // unsignaled ones before it from the send queue (as the plugin's CTS writes).
  static constexpr int kCtsSignalEvery = 16;

  // "vroce0 port 1 gid 3 ::ffff:127.0.5.1 mtu 4096 qpn 0x11"
  const std::string& description() const { return description_; }

 private:
  void open(const Options& options);
  void connect(Rendezvous& rendezvous, const Options& options);
  void poll_completions();
  void release() noexcept;
  // --raw-cts: writes the clear-to-send of receive `seq` for `bytes` into receive slot `slot`.
  void post_clear_to_send(std::uint64_t seq, int slot, std::size_t bytes);
  // Send-queue entries posted and not yet retired by a polled signaled completion.
  std::uint64_t send_queue_used() const { return sq_posted_ - sq_retired_; }

  // libibverbs through the plugin's run-time table (plugin/ibv/library.h), the one every part
  // of the tree loads it with: the --ibverbs path, NCCL_IBVERBS_LIB, else libibverbs.so.1.
  std::shared_ptr<const ibv::Library> verbs_;
  std::size_t capacity_;
  Buffer send_buffer_;
  Buffer recv_buffer_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_mr* send_mr_ = nullptr;
  ibv_mr* recv_mr_ = nullptr;
  std::string device_name_;
  int port_ = 1;
  int gid_index_ = -1;
  ibv_gid gid_{};
  ibv_mtu active_mtu_ = IBV_MTU_1024;
  std::uint32_t psn_ = 0;
  std::uint32_t max_inline_ = 0;
  std::uint64_t remote_addr_ = 0;
  std::uint32_t remote_rkey_ = 0;
  std::string description_;

  int send_depth_ = 0;            // max_send_wr
  std::uint64_t sq_posted_ = 0;   // send WRs posted (data and clear-to-send)
  std::uint64_t sq_retired_ = 0;  // of those, retired by polled signaled completions

  // --raw-cts. ring_: the kCtsRingSlots entries the peer's receives write into (this rank's
  // sends read them); staging_: what this rank's receives write from, one entry per send-queue
  // position it may still occupy. Sequences start at 1 (a zeroed ring is never ready).
  bool cts_ = false;
  std::unique_ptr<CtsEntry[]> ring_;
  std::unique_ptr<CtsEntry[]> staging_;
  std::size_t staging_entries_ = 0;
  ibv_mr* ring_mr_ = nullptr;
  ibv_mr* staging_mr_ = nullptr;
  std::uint64_t remote_ring_addr_ = 0;
  std::uint32_t remote_ring_rkey_ = 0;
  std::uint64_t recv_seq_ = 0;  // the last receive's sequence
  std::uint64_t send_seq_ = 0;  // the last send's sequence
};

}  // namespace roce::bench
