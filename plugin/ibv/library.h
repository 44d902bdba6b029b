// libibverbs, loaded at run time. The plugin never links against rdma-core: it dlopens
// NCCL_IBVERBS_LIB (default "libibverbs.so.1") with RTLD_NOW|RTLD_LOCAL and binds every entry
// point it calls with dlvsym at the version node rdma-core exports it under, so the same binary
// runs on any rdma-core (or on vroce) and fails with one clear message where verbs are missing.
//
// Only the header's inline helpers that reach no exported symbol are used besides these:
// ctx->ops.post_send/post_recv/poll_cq and verbs_get_ctx() for the extended query_port op.
// test/unit checks that roce_core has no undefined ibv_* reference.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>
#include <vector>

#include "roce/result.h"

namespace roce::ibv {

// The entry points, typed from Debian's verbs.h (rdma-core 44).
struct Functions {
  // Required: bound at IBVERBS_1.1 (NCCL's set); a missing one fails the load.
  decltype(&::ibv_get_device_list) get_device_list = nullptr;
  decltype(&::ibv_free_device_list) free_device_list = nullptr;
  decltype(&::ibv_get_device_name) get_device_name = nullptr;
  decltype(&::ibv_open_device) open_device = nullptr;
  decltype(&::ibv_close_device) close_device = nullptr;
  decltype(&::ibv_get_async_event) get_async_event = nullptr;
  decltype(&::ibv_ack_async_event) ack_async_event = nullptr;
  decltype(&::ibv_query_device) query_device = nullptr;
  // The exported symbol writes only the 48-byte _compat_ibv_port_attr; see query_port() in
  // ibv/port_query.h, which prefers the context's extended op.
  decltype(&::ibv_query_port) query_port_compat = nullptr;
  decltype(&::ibv_query_gid) query_gid = nullptr;
  decltype(&::ibv_query_qp) query_qp = nullptr;
  decltype(&::ibv_alloc_pd) alloc_pd = nullptr;
  decltype(&::ibv_dealloc_pd) dealloc_pd = nullptr;
  decltype(&::ibv_reg_mr) reg_mr = nullptr;
  decltype(&::ibv_dereg_mr) dereg_mr = nullptr;
  decltype(&::ibv_create_cq) create_cq = nullptr;
  decltype(&::ibv_destroy_cq) destroy_cq = nullptr;
  decltype(&::ibv_create_qp) create_qp = nullptr;
  decltype(&::ibv_modify_qp) modify_qp = nullptr;
  decltype(&::ibv_destroy_qp) destroy_qp = nullptr;
  decltype(&::ibv_fork_init) fork_init = nullptr;
  decltype(&::ibv_event_type_str) event_type_str = nullptr;

  // Optional: nullptr when the library predates them.
  decltype(&::ibv_reg_mr_iova2) reg_mr_iova2 = nullptr;    // IBVERBS_1.8: relaxed ordering
  decltype(&::ibv_reg_dmabuf_mr) reg_dmabuf_mr = nullptr;  // IBVERBS_1.12: dma-buf MRs
  decltype(&::_ibv_query_gid_ex) query_gid_ex = nullptr;   // IBVERBS_1.11: GID types
  decltype(&::ibv_query_ece) query_ece = nullptr;          // IBVERBS_1.10
  decltype(&::ibv_set_ece) set_ece = nullptr;              // IBVERBS_1.10
  // IBVERBS_1.1, but optional: the plugin names completion statuses itself; the tools that load
  // libibverbs through this table (roce-bench's raw verbs floor) print libibverbs' own names.
  decltype(&::ibv_wc_status_str) wc_status_str = nullptr;
  // rdma-core 62+ (not in older headers, hence the explicit type): the port's effective speed in
  // units of 100 Mb/s. Bound at the library's default version of the symbol.
  int (*query_port_speed)(ibv_context* context, uint32_t port_num, uint64_t* speed) = nullptr;
};

class Library {
 public:
  // "libibverbs.so.1": what rdma-core installs and what NCCL falls back to.
  static constexpr const char* kDefaultPath = "libibverbs.so.1";

  // Loads `path` (empty: kDefaultPath) and binds every entry point; a failure is one line naming
  // the library, the cause (dlerror) and the fix.
  static Result<std::shared_ptr<const Library>> open(const std::string& path);

  // A library whose entry points are given, for unit tests of the layers above (no dlopen).
  static std::shared_ptr<const Library> from_functions(const Functions& functions,
                                                       std::string name);

  // Keeps a successfully loaded library mapped (see library.cpp); unloads a rejected one.
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Functions& fn() const noexcept { return fn_; }
  // The path as requested, and the file the dynamic linker actually opened.
  const std::string& requested_path() const noexcept { return requested_path_; }
  const std::string& resolved_path() const noexcept { return resolved_path_; }
  // Optional entry points this library lacks ("ibv_reg_dmabuf_mr@IBVERBS_1.12", ...), for logs.
  const std::vector<std::string>& missing_optional() const noexcept { return missing_optional_; }

 private:
  Library() = default;

  void* handle_ = nullptr;
  bool reject_on_destroy_ = false;  // dlclose in the destructor (load failed part-way)
  Functions fn_;
  std::string requested_path_;
  std::string resolved_path_;
  std::vector<std::string> missing_optional_;
};

}  // namespace roce::ibv
