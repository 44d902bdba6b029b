/* Every ncclNet table this project exports, and the symbols NCCL looks them up by. */
#ifndef NCCL_NET_NCCL_NET_H_
#define NCCL_NET_NCCL_NET_H_

#include "nccl_net/net_v10.h"
#include "nccl_net/net_v11.h"
#include "nccl_net/net_v12.h"
#include "nccl_net/net_v6.h"
#include "nccl_net/net_v7.h"
#include "nccl_net/net_v8.h"
#include "nccl_net/net_v9.h"

#define NCCL_NET_PLUGIN_SYMBOL_V6 "ncclNetPlugin_v6"
#define NCCL_NET_PLUGIN_SYMBOL_V7 "ncclNetPlugin_v7"
#define NCCL_NET_PLUGIN_SYMBOL_V8 "ncclNetPlugin_v8"
#define NCCL_NET_PLUGIN_SYMBOL_V9 "ncclNetPlugin_v9"
#define NCCL_NET_PLUGIN_SYMBOL_V10 "ncclNetPlugin_v10"
#define NCCL_NET_PLUGIN_SYMBOL_V11 "ncclNetPlugin_v11"
#define NCCL_NET_PLUGIN_SYMBOL_V12 "ncclNetPlugin_v12"

#endif /* NCCL_NET_NCCL_NET_H_ */
