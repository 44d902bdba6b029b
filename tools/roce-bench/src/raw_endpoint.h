// The point-to-point Endpoint directly on verbs, without the plugin: one RC queue pair per peer,
// each message one RDMA WRITE WITH IMMEDIATE into the peer's receive slot (addresses and rkeys
// exchanged once at setup), inline when small, every send signaled, receives as zero-SGE receive
// WQEs. This is the least work a verbs transport can do per message: the floor the plugin is
// compared with.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>

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
  // Deep enough that a sender limited to the window never outruns the posted receives (no CTS
  // here), whatever the receiver's polling lag.
  int receive_depth(int /*window*/) const override { return kReceiveDepth; }
  static constexpr int kReceiveDepth = 512;

  // "vroce0 port 1 gid 3 ::ffff:127.0.5.1 mtu 4096 qpn 0x11"
  const std::string& description() const { return description_; }

 private:
  void open(const Options& options);
  void connect(Rendezvous& rendezvous, const Options& options);
  void poll_completions();
  void release() noexcept;

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
};

}  // namespace roce::bench
