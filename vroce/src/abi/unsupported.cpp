// Entry points that have no meaning for an emulated NIC without a kernel device. Each fails the
// way rdma-core reports "not supported here", with errno set, and says why once in the log.
#include <cerrno>

#include "abi/export.h"
#include "abi/private_decls.h"
#include "util/log.h"

// Needs the kernel's neighbour resolution for a verbs device; vroce resolves peers itself by IP.
VROCE_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context* /*context*/, ibv_ah_attr* /*attr*/,
                                             uint8_t /*eth_mac*/[6], uint16_t* /*vid*/) {
  VROCE_LOG(Info, "ibv_resolve_eth_l2_from_gid is not supported by vroce (no kernel device)");
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

// Importing shares a kernel uverbs context between processes through its cmd_fd; vroce's
// contexts live inside one process.
VROCE_EXPORT ibv_context* ibv_import_device(int /*cmd_fd*/) {
  VROCE_LOG(Info, "ibv_import_device is not supported by vroce (contexts are per process)");
  errno = EOPNOTSUPP;
  return nullptr;
}

VROCE_EXPORT ibv_dm* ibv_import_dm(ibv_context* /*context*/, uint32_t /*dm_handle*/) {
  VROCE_LOG(Info, "ibv_import_dm is not supported by vroce (no device memory)");
  errno = EOPNOTSUPP;
  return nullptr;
}

// Nothing can have been imported, so there is nothing to release; errno still says so.
VROCE_EXPORT void ibv_unimport_dm(ibv_dm* /*dm*/) {
  errno = EOPNOTSUPP;
}

// Providers are kernel-device drivers; vroce is the device, so it loads none. rdma-core keeps
// this pre-1.1 entry point only as a non-default version (ibv_register_driver@IBVERBS_1.1), so
// old binaries still bind to it but nothing new links against it; the symbol version does the
// same. GCC takes its symver attribute, which survives link-time optimisation (a top-level asm
// .symver does not: the LTO partition that holds it loses the binding and the version goes);
// clang 14 has no such attribute and takes the assembler directive.
#if defined(__clang__)
extern "C" __attribute__((visibility("default"))) void vroce_register_driver_1_1(const char* name,
                                                                                 void* init_func);
__asm__(".symver vroce_register_driver_1_1, ibv_register_driver@IBVERBS_1.1");
#else
extern "C" __attribute__((visibility("default"), symver("ibv_register_driver@IBVERBS_1.1"))) void
vroce_register_driver_1_1(const char* name, void* init_func);
#endif
extern "C" void vroce_register_driver_1_1(const char* name, void* /*init_func*/) {
  VROCE_LOG(Warn, "ibv_register_driver(%s) ignored: vroce loads no providers",
            name != nullptr ? name : "(null)");
  errno = ENOSYS;
}
