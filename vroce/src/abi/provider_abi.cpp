// rdma-core's provider ABI (IBVERBS_PRIVATE_34): what a kernel-device provider such as libmlx5
// or libefa calls in libibverbs. vroce is the device and loads no providers, but programs
// linked against Debian's provider libraries (perftest links libmlx5 and libefa, all built with
// BIND_NOW) must still load: the dynamic loader resolves every one of these imports at start-up
// and aborts the program ("undefined symbol: ibv_cmd_destroy_cq, version IBVERBS_PRIVATE_34")
// when one is missing. So each is defined here and fails cleanly: EOPNOTSUPP (returned, and in
// errno) for those that return an errno value, nullptr with errno EOPNOTSUPP for pointers, -1 for
// the sysfs reader. None can be reached through vroce's own objects, since no provider context
// ever exists; only direct calls get here, and the first one is logged.
//
// The definitions take no parameters: callers pass rdma-core's arguments, which the x86-64 and
// AArch64 calling conventions let a callee ignore, and nothing here reads them.
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "abi/export.h"
#include "util/log.h"

namespace {

int refuse(const char* name) {
  static bool warned = false;  // racy by design: at worst two lines
  if (!warned) {
    warned = true;
    VROCE_LOG(Warn,
              "%s is rdma-core's provider ABI (IBVERBS_PRIVATE_34); vroce loads no providers "
              "and fails it with EOPNOTSUPP",
              name);
  }
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

}  // namespace

// Declared first (-Wmissing-declarations): rdma-core declares these in its private driver.h.
#define VROCE_PROVIDER_INT(name) \
  extern "C" int name();         \
  VROCE_EXPORT int name() {      \
    return refuse(#name);        \
  }
#define VROCE_PROVIDER_PTR(name) \
  extern "C" void* name();       \
  VROCE_EXPORT void* name() {    \
    refuse(#name);               \
    return nullptr;              \
  }

extern "C" {
void verbs_register_driver_34(const void* ops);
void verbs_uninit_context(void* context);
void verbs_set_ops(void* context, const void* ops);
void verbs_init_cq(void* cq, void* context, void* channel, void* cq_context);
bool verbs_allow_disassociate_destroy(int ret);
void __verbs_log(void* context, uint32_t level, const char* fmt, ...);
int ibv_read_ibdev_sysfs_file(char* buf, size_t size, void* sysfs_dev, const char* fnfmt, ...);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void* link);
}

// Called by every provider library's constructor when it is loaded (PROVIDER_DRIVER), so it
// is routine, not an error: the registration is dropped without a word above debug level.
VROCE_EXPORT void verbs_register_driver_34(const void* /*ops*/) {
  VROCE_LOG(Debug, "a provider library registered itself; vroce loads no providers, ignored");
}

// Context set-up for a provider's alloc_context: never reached, since no provider is asked to
// open a device.
VROCE_PROVIDER_PTR(_verbs_init_and_alloc_context)
VROCE_PROVIDER_PTR(verbs_open_device)
VROCE_EXPORT void verbs_uninit_context(void* /*context*/) {
  refuse("verbs_uninit_context");
}
VROCE_EXPORT void verbs_set_ops(void* /*context*/, const void* /*ops*/) {
  refuse("verbs_set_ops");
}
VROCE_EXPORT void verbs_init_cq(void* /*cq*/, void* /*context*/, void* /*channel*/,
                                void* /*cq_context*/) {
  refuse("verbs_init_cq");
}
// rdma-core asks this whether a destroy that failed because the device was disassociated
// counts as done; there is no kernel device to be disassociated from.
VROCE_EXPORT bool verbs_allow_disassociate_destroy(int /*ret*/) {
  return false;
}
// The provider logging hook; providers only log through it for their own contexts.
VROCE_EXPORT void __verbs_log(void* /*context*/, uint32_t /*level*/, const char* /*fmt*/, ...) {}
VROCE_EXPORT int ibv_read_ibdev_sysfs_file(char* /*buf*/, size_t /*size*/, void* /*sysfs_dev*/,
                                           const char* /*fmt*/, ...) {
  refuse("ibv_read_ibdev_sysfs_file");
  return -1;
}
// The ioctl command-buffer machinery.
VROCE_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void* /*link*/) {
  return num_attrs;  // a pure size computation; the command itself is refused by execute_ioctl
}
VROCE_PROVIDER_INT(execute_ioctl)

// The kernel command wrappers (uverbs write and ioctl commands).
VROCE_PROVIDER_INT(ibv_cmd_advise_mr)
VROCE_PROVIDER_INT(ibv_cmd_alloc_dm)
VROCE_PROVIDER_INT(ibv_cmd_alloc_mw)
VROCE_PROVIDER_INT(ibv_cmd_alloc_pd)
VROCE_PROVIDER_INT(ibv_cmd_attach_mcast)
VROCE_PROVIDER_INT(ibv_cmd_close_xrcd)
VROCE_PROVIDER_INT(ibv_cmd_create_ah)
VROCE_PROVIDER_INT(ibv_cmd_create_counters)
VROCE_PROVIDER_INT(ibv_cmd_create_cq)
VROCE_PROVIDER_INT(ibv_cmd_create_cq_ex)
VROCE_PROVIDER_INT(ibv_cmd_create_flow)
VROCE_PROVIDER_INT(ibv_cmd_create_flow_action_esp)
VROCE_PROVIDER_INT(ibv_cmd_create_qp)
VROCE_PROVIDER_INT(ibv_cmd_create_qp_ex)
VROCE_PROVIDER_INT(ibv_cmd_create_qp_ex2)
VROCE_PROVIDER_INT(ibv_cmd_create_rwq_ind_table)
VROCE_PROVIDER_INT(ibv_cmd_create_srq)
VROCE_PROVIDER_INT(ibv_cmd_create_srq_ex)
VROCE_PROVIDER_INT(ibv_cmd_create_wq)
VROCE_PROVIDER_INT(ibv_cmd_dealloc_mw)
VROCE_PROVIDER_INT(ibv_cmd_dealloc_pd)
VROCE_PROVIDER_INT(ibv_cmd_dereg_mr)
VROCE_PROVIDER_INT(ibv_cmd_destroy_ah)
VROCE_PROVIDER_INT(ibv_cmd_destroy_counters)
VROCE_PROVIDER_INT(ibv_cmd_destroy_cq)
VROCE_PROVIDER_INT(ibv_cmd_destroy_flow)
VROCE_PROVIDER_INT(ibv_cmd_destroy_flow_action)
VROCE_PROVIDER_INT(ibv_cmd_destroy_qp)
VROCE_PROVIDER_INT(ibv_cmd_destroy_rwq_ind_table)
VROCE_PROVIDER_INT(ibv_cmd_destroy_srq)
VROCE_PROVIDER_INT(ibv_cmd_destroy_wq)
VROCE_PROVIDER_INT(ibv_cmd_detach_mcast)
VROCE_PROVIDER_INT(ibv_cmd_free_dm)
VROCE_PROVIDER_INT(ibv_cmd_get_context)
VROCE_PROVIDER_INT(ibv_cmd_modify_cq)
VROCE_PROVIDER_INT(ibv_cmd_modify_flow_action_esp)
VROCE_PROVIDER_INT(ibv_cmd_modify_qp)
VROCE_PROVIDER_INT(ibv_cmd_modify_qp_ex)
VROCE_PROVIDER_INT(ibv_cmd_modify_srq)
VROCE_PROVIDER_INT(ibv_cmd_modify_wq)
VROCE_PROVIDER_INT(ibv_cmd_open_qp)
VROCE_PROVIDER_INT(ibv_cmd_open_xrcd)
VROCE_PROVIDER_INT(ibv_cmd_poll_cq)
VROCE_PROVIDER_INT(ibv_cmd_post_recv)
VROCE_PROVIDER_INT(ibv_cmd_post_send)
VROCE_PROVIDER_INT(ibv_cmd_post_srq_recv)
VROCE_PROVIDER_INT(ibv_cmd_query_context)
VROCE_PROVIDER_INT(ibv_cmd_query_device_any)
VROCE_PROVIDER_INT(ibv_cmd_query_mr)
VROCE_PROVIDER_INT(ibv_cmd_query_port)
VROCE_PROVIDER_INT(ibv_cmd_query_qp)
VROCE_PROVIDER_INT(ibv_cmd_query_srq)
VROCE_PROVIDER_INT(ibv_cmd_read_counters)
VROCE_PROVIDER_INT(ibv_cmd_reg_dm_mr)
VROCE_PROVIDER_INT(ibv_cmd_reg_dmabuf_mr)
VROCE_PROVIDER_INT(ibv_cmd_reg_mr)
VROCE_PROVIDER_INT(ibv_cmd_req_notify_cq)
VROCE_PROVIDER_INT(ibv_cmd_rereg_mr)
VROCE_PROVIDER_INT(ibv_cmd_resize_cq)
