// libibverbs loaded at run time, as the plugin loads it: dlopen the same library (the --ibverbs
// path, NCCL_IBVERBS_LIB, else libibverbs.so.1) and bind each entry point with dlvsym at the
// version rdma-core exports it under. Loading it rather than linking it keeps roce-bench usable
// on hosts without libibverbs (plugin-only runs, --init-check from diagnose_roce.sh), and makes
// the raw floor run on exactly the library the plugin uses in the same process. The data path
// (post_send, post_recv, poll_cq) goes through the context's ops table, as the inline helpers in
// verbs.h do, so it costs no extra indirection.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace roce::bench {

struct VerbsApi {
  std::string path;
  void* library = nullptr;
  decltype(&::ibv_get_device_list) get_device_list = nullptr;
  decltype(&::ibv_free_device_list) free_device_list = nullptr;
  decltype(&::ibv_get_device_name) get_device_name = nullptr;
  decltype(&::ibv_open_device) open_device = nullptr;
  decltype(&::ibv_close_device) close_device = nullptr;
  decltype(&::ibv_query_port) query_port_compat = nullptr;  // writes the 48-byte compat struct
  decltype(&::ibv_query_gid) query_gid = nullptr;
  decltype(&::_ibv_query_gid_ex) query_gid_ex = nullptr;  // optional (IBVERBS_1.11)
  decltype(&::ibv_alloc_pd) alloc_pd = nullptr;
  decltype(&::ibv_dealloc_pd) dealloc_pd = nullptr;
  decltype(&::ibv_reg_mr) reg_mr = nullptr;
  decltype(&::ibv_dereg_mr) dereg_mr = nullptr;
  decltype(&::ibv_create_cq) create_cq = nullptr;
  decltype(&::ibv_destroy_cq) destroy_cq = nullptr;
  decltype(&::ibv_create_qp) create_qp = nullptr;
  decltype(&::ibv_modify_qp) modify_qp = nullptr;
  decltype(&::ibv_destroy_qp) destroy_qp = nullptr;
  decltype(&::ibv_wc_status_str) wc_status_str = nullptr;

  // Loaded once per process. Throws BenchError naming the library, dlerror() and the fix.
  static VerbsApi& load(const std::string& path);

  // Fills a full ibv_port_attr, zeroed first: the exported symbol writes only the compat part.
  int query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr) const;
  const char* status_text(ibv_wc_status status) const;
};

// The library a rank should load: --ibverbs, else NCCL_IBVERBS_LIB, else libibverbs.so.1.
std::string verbs_library_path(const std::string& option);

}  // namespace roce::bench
