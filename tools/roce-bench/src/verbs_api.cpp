// Run-time binding of libibverbs.
#include "verbs_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "errors.h"

namespace roce::bench {
namespace {

template <typename Fn>
void bind(VerbsApi& api, Fn& fn, const char* name, const char* version, bool required) {
  fn = reinterpret_cast<Fn>(dlvsym(api.library, name, version));
  if (fn == nullptr && required) {
    throw BenchError(api.path + " lacks " + name + "@" + version +
                     "; it is not a libibverbs.so.1 (rdma-core) compatible library");
  }
}

}  // namespace

std::string verbs_library_path(const std::string& option) {
  if (!option.empty()) {
    return option;
  }
  const char* env = std::getenv("NCCL_IBVERBS_LIB");
  if (env != nullptr && *env != '\0') {
    return env;
  }
  return "libibverbs.so.1";
}

VerbsApi& VerbsApi::load(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<VerbsApi>> loaded;
  std::lock_guard lock(mutex);
  auto& slot = loaded[path];
  if (slot) {
    return *slot;
  }
  auto api = std::make_unique<VerbsApi>();
  api->path = path;
  api->library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) {
    const char* why = dlerror();
    throw BenchError("--raw: cannot load libibverbs from " + path + ": " +
                     (why != nullptr ? why : "?") +
                     "; install libibverbs1, or pass --ibverbs PATH (vroce: "
                     "build/<preset>/vroce/lib/libibverbs.so.1)");
  }
  constexpr const char* kV11 = "IBVERBS_1.1";
  bind(*api, api->get_device_list, "ibv_get_device_list", kV11, true);
  bind(*api, api->free_device_list, "ibv_free_device_list", kV11, true);
  bind(*api, api->get_device_name, "ibv_get_device_name", kV11, true);
  bind(*api, api->open_device, "ibv_open_device", kV11, true);
  bind(*api, api->close_device, "ibv_close_device", kV11, true);
  bind(*api, api->query_port_compat, "ibv_query_port", kV11, true);
  bind(*api, api->query_gid, "ibv_query_gid", kV11, true);
  bind(*api, api->query_gid_ex, "_ibv_query_gid_ex", "IBVERBS_1.11", false);
  bind(*api, api->alloc_pd, "ibv_alloc_pd", kV11, true);
  bind(*api, api->dealloc_pd, "ibv_dealloc_pd", kV11, true);
  bind(*api, api->reg_mr, "ibv_reg_mr", kV11, true);
  bind(*api, api->dereg_mr, "ibv_dereg_mr", kV11, true);
  bind(*api, api->create_cq, "ibv_create_cq", kV11, true);
  bind(*api, api->destroy_cq, "ibv_destroy_cq", kV11, true);
  bind(*api, api->create_qp, "ibv_create_qp", kV11, true);
  bind(*api, api->modify_qp, "ibv_modify_qp", kV11, true);
  bind(*api, api->destroy_qp, "ibv_destroy_qp", kV11, true);
  bind(*api, api->wc_status_str, "ibv_wc_status_str", kV11, false);
  slot = std::move(api);
  return *slot;
}

int VerbsApi::query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr) const {
  std::memset(attr, 0, sizeof(*attr));
  return query_port_compat(context, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

const char* VerbsApi::status_text(ibv_wc_status status) const {
  return wc_status_str != nullptr ? wc_status_str(status) : "?";
}

}  // namespace roce::bench
