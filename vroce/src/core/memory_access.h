// How the progress thread reads and writes application memory: through the device's key table
// (so every access is checked against the key, the PD, the bounds and the rights, and pins the
// region while it copies) and through gpu/memory.h for CUDA regions. Gathering a packet's payload
// from an SGE list, scattering a payload into one, and placing bytes at an IOVA under an rkey.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>

#include "core/device_copies.h"
#include "core/key_table.h"
#include "wire/packet.h"

namespace vroce::core {
struct Pd;
struct Qp;

// The payload pieces of one outgoing packet, with the regions they point into pinned until the
// Gather is destroyed (after the packet was built).
class Gather {
 public:
  static constexpr size_t kMaxPieces = 32;

  Gather() noexcept {}
  Gather(const Gather&) = delete;
  Gather& operator=(const Gather&) = delete;
  ~Gather() { release(); }

  // Collects [offset, offset + length) of the message described by `sges` (lkeys, local read).
  // CUDA pieces are copied into `bounce` (one MTU), through `ahead` when given (the packets
  // after this one in the same SGE then need no copy of their own). Returns KeyError::None on
  // success.
  KeyError collect(const KeyTable& keys, const Pd* pd, const ibv_sge* sges, uint32_t num_sge,
                   uint64_t offset, uint32_t length, std::span<uint8_t> bounce,
                   DeviceReadAhead* ahead = nullptr);

  // The same from one remote region under an rkey with REMOTE_READ (READ responses); `rest` is
  // how many bytes of the READ remain from `va` (what `ahead` may bring over at once).
  KeyError collect_remote(const KeyTable& keys, const Pd* pd, uint32_t rkey, uint64_t va,
                          uint32_t length, std::span<uint8_t> bounce,
                          DeviceReadAhead* ahead = nullptr, uint64_t rest = 0);

  std::span<const wire::ByteSpan> pieces() const noexcept { return {pieces_.at, count_}; }

  // Unpins everything (also done by the destructor).
  void release() noexcept {
    for (size_t i = 0; i < pinned_; ++i) {
      pins_.at[i].~MrRef();
    }
    pinned_ = 0;
    count_ = 0;
  }

 private:
  // Piece i (storage that may hold no object yet).
  void set_piece(size_t i, wire::ByteSpan piece) noexcept {
    new (&pieces_.at[i]) wire::ByteSpan(piece);
  }
  // Pins region `ref` as the next piece's.
  void pin(MrRef&& ref) noexcept { new (&pins_.at[pinned_++]) MrRef(std::move(ref)); }

  // Raw storage, of which only the first count_ pieces and pinned_ pins are ever built: a Gather
  // is made for every packet sent, and building all 32 of each cost about 130 instructions a
  // packet (callgrind), more than its headers. A CUDA payload copied into the bounce buffer is one
  // piece whose regions stay pinned, so the two counts differ.
  union Pieces {
    Pieces() noexcept {}
    wire::ByteSpan at[kMaxPieces];
  } pieces_;
  union Pins {
    Pins() noexcept {}
    ~Pins() {}
    MrRef at[kMaxPieces];
  } pins_;
  size_t count_ = 0;
  size_t pinned_ = 0;
};

// Writes `data` at byte `offset` of the message buffer described by `sges` (lkeys needing
// LOCAL_WRITE). Returns KeyError::None, or why it could not (nothing partial is undone: a NIC
// also leaves the bytes it already wrote). Bytes for CUDA memory are queued for `owner`
// (queue_device_write) when it is given, else copied at once.
KeyError scatter(const KeyTable& keys, const Pd* pd, const ibv_sge* sges, uint32_t num_sge,
                 uint64_t offset, wire::ByteSpan data, Qp* owner = nullptr);

// Writes `data` at IOVA `va` of the region of `rkey`, which must grant `access`; CUDA bytes as
// scatter() does.
KeyError place_remote(const KeyTable& keys, const Pd* pd, uint32_t rkey, uint64_t va,
                      unsigned access, wire::ByteSpan data, Qp* owner = nullptr);

// Checks that every SGE resolves with `access` (0 = local read) and that the SGEs add up to at
// most 2^31 bytes (the largest RC message). Returns KeyError::None when usable.
KeyError check_sges(const KeyTable& keys, const Pd* pd, const ibv_sge* sges, uint32_t num_sge,
                    unsigned access);

}  // namespace vroce::core
