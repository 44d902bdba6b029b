// How received payload is stored into registered host memory: in increasing address order, with
// the packet's last aligned 8-byte word stored last, with release semantics, the way a NIC's PCIe
// posted writes land. Protocols that poll the last word of a buffer written by RDMA (the plugin's
// CTS ring: the sequence in the last eight bytes of each entry) rely on that order; memcpy gives
// none (glibc stores a block's tail before its middle for some sizes, and rep movsb's stores may
// become visible out of order).
#pragma once

#include <cstddef>

namespace vroce::core {

// Copies n bytes from src to dst (non-overlapping). Bytes are stored in ascending address order,
// in 16-byte pieces, except that the last 8-byte-aligned word lying wholly inside [dst, dst + n)
// is stored after every byte below it, with one release store (__atomic_store_n), and the bytes
// above it (fewer than 8) after that. A thread that reads that word with an acquire load and sees
// the new value therefore sees every earlier byte of this copy, and of earlier copies of the same
// thread, formally (C++ memory model, so ThreadSanitizer agrees) and on every architecture. On x86
// (TSO), every store is also observed in ascending order.
void ordered_copy(void* dst, const void* src, size_t n) noexcept;

}  // namespace vroce::core
