// The device-level query operations, shared by the exported entry points (query.cpp) and the
// op tables ibv_open_device installs (context.cpp): verbs_context.query_port, which the
// header-inline ibv_query_port calls with the caller's sizeof, and query_device_ex, which
// ibv_query_device_ex reaches through verbs_get_ctx_op.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>

namespace vroce::abi {

// Writes min(port_attr_len, sizeof(ibv_port_attr)) bytes of port 1's attributes and zeroes any
// tail a newer caller's struct has. 0 or EINVAL (bad port, or a length shorter than the 48-byte
// pre-port_cap_flags2 layout).
int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* port_attr,
               size_t port_attr_len);

int query_device(ibv_context* context, ibv_device_attr* device_attr);

int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size);

}  // namespace vroce::abi
