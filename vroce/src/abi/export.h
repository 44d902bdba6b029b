// Marks the C entry points that libibverbs.so.1 exports; libibverbs.map assigns their version
// nodes (IBVERBS_1.0 .. IBVERBS_1.14, IBVERBS_PRIVATE_34) exactly as rdma-core 44 does.
#pragma once

#define VROCE_EXPORT extern "C" __attribute__((visibility("default")))
