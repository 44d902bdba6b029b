// Port attributes, read the way rdma-core's own inline ibv_query_port does it but without
// reaching the exported symbol unless needed: the context's extended query_port op fills the
// whole struct (port_cap_flags2, and active_speed_ex on rdma-core 50+); the exported
// IBVERBS_1.1 ibv_query_port, which writes only the 48-byte compat prefix, is the fallback.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "ibv/library.h"

namespace roce::ibv {

// ibv_port_attr as rdma-core 50+ lays it out: rdma-core 44's 52 bytes, then active_speed_ex,
// which carries speed codes that no longer fit active_speed's 8 bits (XDR = 0x100).
struct PortAttributes {
  ibv_port_attr attr;
  uint32_t active_speed_ex;
};
static_assert(sizeof(ibv_port_attr) == 52, "rdma-core 44 layout expected");
static_assert(offsetof(PortAttributes, active_speed_ex) == 52);

// Fills *out (zeroed first). Returns 0 or an errno value.
int query_port(const Library& lib, ibv_context* context, uint8_t port_num,
               PortAttributes* out) noexcept;

// The speed code in force: active_speed_ex when the library reported one, else active_speed.
inline uint32_t effective_speed_code(const PortAttributes& port) noexcept {
  return port.active_speed_ex != 0 ? port.active_speed_ex : port.attr.active_speed;
}

}  // namespace roce::ibv
