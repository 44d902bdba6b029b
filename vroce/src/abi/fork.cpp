// Fork support. rdma-core needs ibv_fork_init so that registered (DMA-pinned) pages are not
// shared copy-on-write with a child. vroce pins nothing and no device writes to memory behind
// the kernel's back: its engine is a thread of this process, so after fork() the parent's
// memory is the parent's and the child simply has no vroce threads. Fork is therefore safe
// without preparation, which is what IBV_FORK_UNNEEDED reports.
#include "abi/export.h"
#include "abi/private_decls.h"

VROCE_EXPORT int ibv_fork_init(void) {
  return 0;
}

VROCE_EXPORT ibv_fork_status ibv_is_fork_initialized(void) {
  return IBV_FORK_UNNEEDED;
}

VROCE_EXPORT int ibv_dontfork_range(void* /*base*/, size_t /*size*/) {
  return 0;
}

VROCE_EXPORT int ibv_dofork_range(void* /*base*/, size_t /*size*/) {
  return 0;
}
