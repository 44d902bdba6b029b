#include "init_check_hint.h"

#include <dlfcn.h>

#include <cstdlib>

#include "locations.h"

namespace roce::bench {

std::string verbs_library_in_use(const Options& options) {
  if (!options.ibverbs_path.empty()) {
    return options.ibverbs_path;
  }
  if (const char* env = std::getenv("NCCL_IBVERBS_LIB"); env != nullptr && *env != '\0') {
    return env;
  }
  return "libibverbs.so.1";
}

// vroce exports its counters under its own version node; rdma-core has no such symbol.
bool is_vroce_library(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    return false;
  }
  const bool vroce = dlvsym(handle, "vroce_stats_json", "VROCE_PRIVATE_1.0") != nullptr;
  dlclose(handle);
  return vroce;
}

std::optional<std::string> vroce_init_check_hint(const Options& options) {
  const std::string library = verbs_library_in_use(options);
  if (is_vroce_library(library)) {
    return std::nullopt;
  }
  const std::string vroce = default_vroce_path();
  std::string hint =
      "hint: the plugin used " + library +
      ", which found no usable RDMA device. On a machine without an RDMA NIC, run it on vroce, "
      "this build's emulated RoCEv2 NIC:\n";
  if (vroce.empty()) {
    hint += "  cmake --build build/<preset> --target vroce\n";
    hint += "  roce-bench --init-check --ibverbs build/<preset>/vroce/lib/libibverbs.so.1\n";
  } else {
    hint += "  roce-bench --init-check --ibverbs " + vroce + "\n";
  }
  hint +=
      "  (or NCCL_IBVERBS_LIB=<that path> for NCCL itself). vroce's devices are vroce0..vroce7 "
      "on 127.0.0.11..127.0.0.18 unless VROCE_DEVICES=name=address,... says otherwise; "
      "NCCL_IB_HCA=vroce0 picks one. See docs/vroce.md.\n";
  return hint;
}

}  // namespace roce::bench
