/* A stand-in for plugins that fill their ncclNet table inside init, as nccl-rdma-sharp-plugins
 * does (its exported table holds only a name and init until init has picked IB or UCX). Its
 * init loads the plugin named at build time, inits it, and copies that table's members into its
 * own under another name, so roce-bench can be shown to measure a table that is complete only
 * after init and a plugin that is not called "RoCE". A test aid: never installed. */
#include <dlfcn.h>
#include <stddef.h>

#include "nccl_net/nccl_net.h"

#ifndef LATE_TABLE_TARGET
#error "LATE_TABLE_TARGET: the plugin to forward to"
#endif

static ncclResult_t late_init(ncclDebugLogger_t logger);

__attribute__((visibility("default"))) ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = "LateTable-loading",
    .init = late_init,
};

static ncclResult_t late_init(ncclDebugLogger_t logger) {
  void* library = dlopen(LATE_TABLE_TARGET, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    return ncclSystemError;
  }
  const ncclNet_v8_t* real = (const ncclNet_v8_t*)dlsym(library, NCCL_NET_PLUGIN_SYMBOL_V8);
  if (real == NULL) {
    return ncclSystemError;
  }
  const ncclResult_t result = real->init(logger);
  if (result != ncclSuccess) {
    return result;
  }
  ncclNet_v8_t table = *real;
  table.name = "LateTable";
  table.init = late_init;
  ncclNetPlugin_v8 = table;
  return ncclSuccess;
}
