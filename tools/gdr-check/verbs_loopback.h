// Two RC queue pairs on this node connected to each other (on one RDMA device, or from one
// device to another), each with its own protection domain, so a memory region registered on
// one side is reached by the other only through the network path: RDMA WRITE and READ go
// through the NIC exactly as between two hosts.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "options.h"

namespace gdr {

struct MrDeleter {
  void operator()(ibv_mr* mr) const noexcept;
};
using MrPtr = std::unique_ptr<ibv_mr, MrDeleter>;

struct Side;  // one device's context, PD, CQ and QP

class Loopback {
 public:
  enum class Error { None, NoDevice, Setup };

  // Opens the devices named in the options, creates and connects the queue pairs.
  // On failure returns nullptr with *error set and *kind telling a missing device from a setup
  // failure.
  static std::unique_ptr<Loopback> open(const Options& options, std::string* error, Error* kind);
  ~Loopback();
  Loopback(const Loopback&) = delete;
  Loopback& operator=(const Loopback&) = delete;

  // "mlx5_0 port 1 GID 3 (::ffff:10.0.0.1) -> mlx5_1 port 1 GID 3 (::ffff:10.0.1.1)"
  std::string describe() const;

  // Registers memory on side 0 (requester) or 1 (responder). nullptr with *error on failure.
  MrPtr register_pointer(int side, void* addr, size_t length, std::string* error);
  MrPtr register_dmabuf(int side, int fd, uint64_t iova, size_t length, std::string* error);

  // Posts `count` RDMA WRITEs (or READs) of `length` bytes between the requester's `local` and
  // the responder's `remote` region, keeping a window in flight, and waits for every completion.
  // The addresses are IOVAs: for a dma-buf region the iova it was registered with (its
  // ibv_mr::addr is the offset into the dma-buf, as rdma-core sets it, not an address).
  bool transfer(ibv_wr_opcode opcode, const ibv_mr& local, uint64_t local_iova,
                const ibv_mr& remote, uint64_t remote_iova, size_t length, int count,
                std::string* error);

 private:
  Loopback();
  std::unique_ptr<Side> sides_[2];
};

}  // namespace gdr
