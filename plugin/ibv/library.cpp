// Loading libibverbs: see library.h.
#include "ibv/library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <utility>

#include "util/log.h"

namespace roce::ibv {
namespace {

constexpr const char* kRequiredVersion = "IBVERBS_1.1";

// dlvsym hands back a data pointer; copying the bits is the portable way to a function pointer.
template <typename Fn>
void assign(Fn& slot, void* symbol) noexcept {
  static_assert(sizeof(Fn) == sizeof(void*));
  std::memcpy(&slot, &symbol, sizeof(slot));
}

struct Binder {
  void* handle;
  std::vector<std::string> missing;
  std::string first_error;

  template <typename Fn>
  void bind(Fn& slot, const char* name, const char* version) {
    dlerror();  // clear a stale error so the one we read belongs to this lookup
    void* symbol = dlvsym(handle, name, version);
    if (symbol == nullptr) {
      const char* why = dlerror();
      if (first_error.empty() && why != nullptr) {
        first_error = why;
      }
      missing.push_back(std::string(name) + "@" + version);
      return;
    }
    assign(slot, symbol);
  }

  // For an entry point too new for its version node to be fixed here: the library's default
  // version, which is the one a program linked against that library would get.
  template <typename Fn>
  void bind_default(Fn& slot, const char* name) {
    dlerror();
    void* symbol = dlsym(handle, name);
    if (symbol == nullptr) {
      missing.push_back(name);
      return;
    }
    assign(slot, symbol);
  }
};

std::string resolved_file(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) {
      out += ", ";
    }
    out += item;
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<const Library>> Library::open(const std::string& path) {
  const std::string requested = path.empty() ? std::string(kDefaultPath) : path;
  void* handle = dlopen(requested.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return failure(
        fmt::format("cannot load libibverbs from '{}': {}; install rdma-core's libibverbs "
                    "(Debian/Ubuntu: apt install libibverbs1 ibverbs-providers; RHEL: dnf install "
                    "libibverbs) or set NCCL_IBVERBS_LIB to the full path of libibverbs.so.1",
                    requested, why != nullptr ? why : "unknown dlopen error"));
  }

  std::shared_ptr<Library> lib(new Library());
  lib->handle_ = handle;
  lib->reject_on_destroy_ = true;  // unloaded again if we fail below
  lib->requested_path_ = requested;
  lib->resolved_path_ = resolved_file(handle, requested);

  Functions& f = lib->fn_;
  Binder required{handle, {}, {}};
  required.bind(f.get_device_list, "ibv_get_device_list", kRequiredVersion);
  required.bind(f.free_device_list, "ibv_free_device_list", kRequiredVersion);
  required.bind(f.get_device_name, "ibv_get_device_name", kRequiredVersion);
  required.bind(f.open_device, "ibv_open_device", kRequiredVersion);
  required.bind(f.close_device, "ibv_close_device", kRequiredVersion);
  required.bind(f.get_async_event, "ibv_get_async_event", kRequiredVersion);
  required.bind(f.ack_async_event, "ibv_ack_async_event", kRequiredVersion);
  required.bind(f.query_device, "ibv_query_device", kRequiredVersion);
  required.bind(f.query_port_compat, "ibv_query_port", kRequiredVersion);
  required.bind(f.query_gid, "ibv_query_gid", kRequiredVersion);
  required.bind(f.query_qp, "ibv_query_qp", kRequiredVersion);
  required.bind(f.alloc_pd, "ibv_alloc_pd", kRequiredVersion);
  required.bind(f.dealloc_pd, "ibv_dealloc_pd", kRequiredVersion);
  required.bind(f.reg_mr, "ibv_reg_mr", kRequiredVersion);
  required.bind(f.dereg_mr, "ibv_dereg_mr", kRequiredVersion);
  required.bind(f.create_cq, "ibv_create_cq", kRequiredVersion);
  required.bind(f.destroy_cq, "ibv_destroy_cq", kRequiredVersion);
  required.bind(f.create_qp, "ibv_create_qp", kRequiredVersion);
  required.bind(f.modify_qp, "ibv_modify_qp", kRequiredVersion);
  required.bind(f.destroy_qp, "ibv_destroy_qp", kRequiredVersion);
  required.bind(f.fork_init, "ibv_fork_init", kRequiredVersion);
  required.bind(f.event_type_str, "ibv_event_type_str", kRequiredVersion);
  if (!required.missing.empty()) {
    return failure(fmt::format(
        "libibverbs at '{}' lacks required entry point(s) {} ({}); it is not rdma-core's "
        "libibverbs.so.1 or is older than the IBVERBS_1.1 ABI; point NCCL_IBVERBS_LIB at "
        "rdma-core's libibverbs.so.1 (rdma-core 17 or newer)",
        lib->resolved_path_, join(required.missing), required.first_error));
  }

  Binder optional{handle, {}, {}};
  optional.bind(f.reg_mr_iova2, "ibv_reg_mr_iova2", "IBVERBS_1.8");
  optional.bind(f.query_ece, "ibv_query_ece", "IBVERBS_1.10");
  optional.bind(f.set_ece, "ibv_set_ece", "IBVERBS_1.10");
  optional.bind(f.query_gid_ex, "_ibv_query_gid_ex", "IBVERBS_1.11");
  optional.bind(f.reg_dmabuf_mr, "ibv_reg_dmabuf_mr", "IBVERBS_1.12");
  optional.bind(f.wc_status_str, "ibv_wc_status_str", kRequiredVersion);
  optional.bind_default(f.query_port_speed, "ibv_query_port_speed");
  lib->missing_optional_ = std::move(optional.missing);
  lib->reject_on_destroy_ = false;

  ROCE_INFO(NCCL_INIT, "libibverbs loaded from {}{}{}", lib->resolved_path_,
            lib->missing_optional_.empty() ? "" : "; absent optional entry points: ",
            join(lib->missing_optional_));
  return std::shared_ptr<const Library>(std::move(lib));
}

std::shared_ptr<const Library> Library::from_functions(const Functions& functions,
                                                       std::string name) {
  std::shared_ptr<Library> lib(new Library());
  lib->fn_ = functions;
  lib->requested_path_ = name;
  lib->resolved_path_ = std::move(name);
  return lib;
}

Library::~Library() {
  // A library that loaded completely stays mapped for the life of the process, as NCCL's own
  // verbs wrapper does: providers (and vroce) may keep threads or exit handlers inside it, and
  // a later init dlopens the same handle again. Only a rejected library is unloaded.
  if (handle_ != nullptr && reject_on_destroy_ && dlclose(handle_) != 0) {
    const char* why = dlerror();
    ROCE_WARN(NCCL_INIT, "dlclose of {} failed: {}", resolved_path_,
              why != nullptr ? why : "unknown error");
  }
}

}  // namespace roce::ibv
