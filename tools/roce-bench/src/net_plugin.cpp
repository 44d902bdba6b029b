// Loading and driving the plugin's ncclNet table.
#include "net_plugin.h"

#include <dlfcn.h>

#include <climits>
#include <cstdio>
#include <utility>

#include "errors.h"
#include "profiler_check.h"

namespace roce::bench {
namespace {

void* const kLlHint = reinterpret_cast<void*>(0x1);

std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", p);
  return text;
}

template <typename Table>
const Table* lookup_table(void* library, const char* symbol) {
  return static_cast<const Table*>(dlsym(library, symbol));
}

const char* symbol_of(Api api) {
  switch (api) {
    case Api::V8:
      return NCCL_NET_PLUGIN_SYMBOL_V8;
    case Api::V9:
      return NCCL_NET_PLUGIN_SYMBOL_V9;
    case Api::V10:
      return NCCL_NET_PLUGIN_SYMBOL_V10;
    case Api::V11:
      return NCCL_NET_PLUGIN_SYMBOL_V11;
  }
  return "?";
}

// What NCCL reads before init: the name (for NCCL_NET and its log) and init itself. A plugin
// may fill in the rest of its table inside init (nccl-rdma-sharp-plugins picks IB or UCX there
// and copies that transport's members in), so those are checked after init, as NCCL first
// calls them then.
template <typename Table>
void check_table_before_init(const Table& t, const std::string& where) {
  if (t.name == nullptr || t.init == nullptr) {
    throw BenchError(where + " has a NULL " + (t.name == nullptr ? "name" : "init") +
                     "; NCCL could not load it");
  }
}

// The members NCCL calls unconditionally after init; a NULL one would crash NCCL, so it fails
// the run.
template <typename Table>
void check_table(const Table& t, const std::string& where) {
  std::string missing;
  auto need = [&missing](const void* fn, const char* name) {
    if (fn == nullptr) {
      missing += missing.empty() ? name : std::string(", ") + name;
    }
  };
  need(t.name, "name");
  need(reinterpret_cast<const void*>(t.devices), "devices");
  need(reinterpret_cast<const void*>(t.getProperties), "getProperties");
  need(reinterpret_cast<const void*>(t.listen), "listen");
  need(reinterpret_cast<const void*>(t.connect), "connect");
  need(reinterpret_cast<const void*>(t.accept), "accept");
  need(reinterpret_cast<const void*>(t.regMr), "regMr");
  need(reinterpret_cast<const void*>(t.deregMr), "deregMr");
  need(reinterpret_cast<const void*>(t.isend), "isend");
  need(reinterpret_cast<const void*>(t.irecv), "irecv");
  need(reinterpret_cast<const void*>(t.test), "test");
  need(reinterpret_cast<const void*>(t.closeSend), "closeSend");
  need(reinterpret_cast<const void*>(t.closeRecv), "closeRecv");
  need(reinterpret_cast<const void*>(t.closeListen), "closeListen");
  if constexpr (std::is_same_v<Table, ncclNet_v11_t>) {
    need(reinterpret_cast<const void*>(t.finalize), "finalize (NCCL calls it unchecked)");
  }
  if (!missing.empty()) {
    throw BenchError(where + " has NULL members after init: " + missing +
                     "; NCCL would crash on them");
  }
}

template <typename Props>
NetProperties convert_common(const Props& p) {
  NetProperties out;
  out.name = p.name != nullptr ? p.name : "";
  if (p.pciPath != nullptr) {
    out.pci_path = p.pciPath;
  }
  out.guid = p.guid;
  out.ptr_support = p.ptrSupport;
  out.reg_is_global = p.regIsGlobal;
  out.speed_mbps = p.speed;
  out.port = p.port;
  out.latency_us = p.latency;
  out.max_comms = p.maxComms;
  out.max_recvs = p.maxRecvs;
  out.net_device_type = static_cast<int>(p.netDeviceType);
  out.net_device_version = p.netDeviceVersion;
  return out;
}

template <typename Props>
NetProperties convert_v9_plus(const Props& p) {
  NetProperties out = convert_common(p);
  out.force_flush = p.forceFlush;
  out.vdev_count = p.vProps.ndevs;
  out.max_p2p_bytes = p.maxP2pBytes;
  out.max_coll_bytes = p.maxCollBytes;
  return out;
}

}  // namespace

std::string ptr_support_text(int ptr_support) {
  std::string text;
  auto add = [&text](const char* name) { text += text.empty() ? name : std::string("|") + name; };
  if ((ptr_support & NCCL_PTR_HOST) != 0) {
    add("HOST");
  }
  if ((ptr_support & NCCL_PTR_CUDA) != 0) {
    add("CUDA");
  }
  if ((ptr_support & NCCL_PTR_DMABUF) != 0) {
    add("DMABUF");
  }
  const int unknown = ptr_support & ~(NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF);
  if (unknown != 0) {
    add(("0x" +
         [unknown] {
           char b[16];
           std::snprintf(b, sizeof(b), "%x", static_cast<unsigned>(unknown));
           return std::string(b);
         }())
            .c_str());
  }
  return text.empty() ? "none" : text;
}

const char* nccl_result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    case ncclNumResults:
      break;
  }
  return "unknown ncclResult_t";
}

NetPlugin::NetPlugin(const std::string& path, Api api) : path_(path), api_(api) {
  library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* why = dlerror();
    throw BenchError("cannot load the plugin " + path + ": " + (why != nullptr ? why : "?") +
                     "; build it (cmake --build build/<preset> --target nccl_net_roce) or pass " +
                     "--plugin PATH");
  }
  const std::string where = path + " " + symbol_of(api);
  switch (api) {
    case Api::V8:
      v8_ = lookup_table<ncclNet_v8_t>(library_, NCCL_NET_PLUGIN_SYMBOL_V8);
      break;
    case Api::V9:
      v9_ = lookup_table<ncclNet_v9_t>(library_, NCCL_NET_PLUGIN_SYMBOL_V9);
      break;
    case Api::V10:
      v10_ = lookup_table<ncclNet_v10_t>(library_, NCCL_NET_PLUGIN_SYMBOL_V10);
      break;
    case Api::V11:
      v11_ = lookup_table<ncclNet_v11_t>(library_, NCCL_NET_PLUGIN_SYMBOL_V11);
      break;
  }
  if (v8_ == nullptr && v9_ == nullptr && v10_ == nullptr && v11_ == nullptr) {
    std::string exported;
    for (const char* s : {NCCL_NET_PLUGIN_SYMBOL_V8, NCCL_NET_PLUGIN_SYMBOL_V9,
                          NCCL_NET_PLUGIN_SYMBOL_V10, NCCL_NET_PLUGIN_SYMBOL_V11}) {
      if (dlsym(library_, s) != nullptr) {
        exported += exported.empty() ? s : std::string(", ") + s;
      }
    }
    dlclose(library_);
    library_ = nullptr;
    throw BenchError(path + " does not export " + symbol_of(api) + " (it exports: " +
                     (exported.empty() ? "no ncclNetPlugin_v8..v11 table" : exported) +
                     "); pick another --api");
  }
  try {
    if (v8_ != nullptr) {
      check_table_before_init(*v8_, where);
    } else if (v9_ != nullptr) {
      check_table_before_init(*v9_, where);
    } else if (v10_ != nullptr) {
      check_table_before_init(*v10_, where);
    } else {
      check_table_before_init(*v11_, where);
    }
    name_ = current_name();
  } catch (...) {
    dlclose(library_);
    library_ = nullptr;
    throw;
  }
}

NetPlugin::~NetPlugin() {
  try {
    finalize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roce-bench: %s\n", e.what());
  }
  // NCCL dlcloses a plugin when its last communicator goes; do the same so a plugin that
  // leaves threads running into unloaded code shows up here rather than in production.
  if (library_ != nullptr) {
    dlclose(library_);
  }
}

std::string NetPlugin::symbol() const {
  return symbol_of(api_);
}

void NetPlugin::timed_region(bool begin) {
  if (begin) {
    region_start_ = counters_;
    return;
  }
  timed_counters_.isend += counters_.isend - region_start_.isend;
  timed_counters_.isend_retry += counters_.isend_retry - region_start_.isend_retry;
  timed_counters_.irecv += counters_.irecv - region_start_.irecv;
  timed_counters_.irecv_retry += counters_.irecv_retry - region_start_.irecv_retry;
  timed_counters_.test += counters_.test - region_start_.test;
  timed_counters_.test_pending += counters_.test_pending - region_start_.test_pending;
  timed_counters_.iflush += counters_.iflush - region_start_.iflush;
  timed_counters_.ll_hints += counters_.ll_hints - region_start_.ll_hints;
}

void NetPlugin::check(ncclResult_t result, const char* call, const std::string& context) const {
  if (result != ncclSuccess) {
    throw BenchError(std::string("plugin ") + name_ + " " + call + "(" + context + ") returned " +
                     nccl_result_name(result) + " (" + std::to_string(static_cast<int>(result)) +
                     "); its NCCL WARN lines above say why");
  }
}

void NetPlugin::init(ncclDebugLogger_t logger, int traffic_class, std::uint64_t comm_id) {
  comm_config_.trafficClass = traffic_class;
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->init(logger);
      break;
    case Api::V9:
      result = v9_->init(logger);
      break;
    case Api::V10:
      result = v10_->init(logger, profiler_callback());
      break;
    case Api::V11: {
      ncclNetCommConfig_v11_t config{traffic_class};
      result = v11_->init(&ctx_, comm_id, &config, logger, profiler_callback());
      break;
    }
  }
  check(result, "init", "");
  initialized_ = true;
  // The table is complete now; it may also have a new name (the sharp plugin's says "IB").
  const std::string where = path_ + " " + symbol_of(api_);
  switch (api_) {
    case Api::V8:
      check_table(*v8_, where);
      break;
    case Api::V9:
      check_table(*v9_, where);
      break;
    case Api::V10:
      check_table(*v10_, where);
      break;
    case Api::V11:
      check_table(*v11_, where);
      break;
  }
  name_ = current_name();
}

std::string NetPlugin::current_name() const {
  const char* name = v8_ != nullptr    ? v8_->name
                     : v9_ != nullptr  ? v9_->name
                     : v10_ != nullptr ? v10_->name
                                       : v11_->name;
  return name != nullptr ? name : "";
}

void NetPlugin::finalize() {
  if (!initialized_) {
    return;
  }
  initialized_ = false;
  if (api_ == Api::V11) {
    check(v11_->finalize(ctx_), "finalize", "ctx " + hex(ctx_));
    ctx_ = nullptr;
  }
}

int NetPlugin::devices() {
  int n = 0;
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->devices(&n);
      break;
    case Api::V9:
      result = v9_->devices(&n);
      break;
    case Api::V10:
      result = v10_->devices(&n);
      break;
    case Api::V11:
      result = v11_->devices(&n);
      break;
  }
  check(result, "devices", "");
  return n;
}

NetProperties NetPlugin::properties(int dev) {
  const std::string ctx = "dev " + std::to_string(dev);
  switch (api_) {
    case Api::V8: {
      ncclNetProperties_v8_t p{};
      check(v8_->getProperties(dev, &p), "getProperties", ctx);
      NetProperties out = convert_common(p);
      out.max_p2p_bytes = std::size_t{1} << 30;  // NCCL's v8 shim
      out.max_coll_bytes = std::size_t{512} << 20;
      return out;
    }
    case Api::V9: {
      ncclNetProperties_v9_t p{};
      check(v9_->getProperties(dev, &p), "getProperties", ctx);
      return convert_v9_plus(p);
    }
    case Api::V10: {
      ncclNetProperties_v10_t p{};
      check(v10_->getProperties(dev, &p), "getProperties", ctx);
      return convert_v9_plus(p);
    }
    case Api::V11: {
      ncclNetProperties_v11_t p{};
      check(v11_->getProperties(dev, &p), "getProperties", ctx);
      NetProperties out = convert_v9_plus(p);
      out.max_multi_request_size = p.maxMultiRequestSize;
      return out;
    }
  }
  return {};
}

void* NetPlugin::listen(int dev, NetHandle& handle) {
  void* comm = nullptr;
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->listen(dev, handle.data(), &comm);
      break;
    case Api::V9:
      result = v9_->listen(dev, handle.data(), &comm);
      break;
    case Api::V10:
      result = v10_->listen(dev, handle.data(), &comm);
      break;
    case Api::V11:
      result = v11_->listen(ctx_, dev, handle.data(), &comm);
      break;
  }
  check(result, "listen", "dev " + std::to_string(dev));
  if (comm == nullptr) {
    throw BenchError("plugin " + name_ + " listen(dev " + std::to_string(dev) +
                     ") returned ncclSuccess with a NULL listenComm; NCCL requires a comm");
  }
  return comm;
}

void* NetPlugin::connect(int dev, NetHandle& handle) {
  void* comm = nullptr;
  ncclNetDeviceHandle_v8_t* dev_comm = nullptr;
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->connect(dev, handle.data(), &comm, &dev_comm);
      break;
    case Api::V9:
      result = v9_->connect(dev, handle.data(), &comm, &dev_comm);
      break;
    case Api::V10:
      result = v10_->connect(dev, &comm_config_, handle.data(), &comm, &dev_comm);
      break;
    case Api::V11:
      result = v11_->connect(ctx_, dev, handle.data(), &comm, &dev_comm);
      break;
  }
  check(result, "connect", "dev " + std::to_string(dev));
  if (dev_comm != nullptr) {
    throw BenchError("plugin " + name_ +
                     " connect returned a device handle (network offload); roce-bench, like "
                     "NCCL's host path, expects none");
  }
  return comm;
}

void* NetPlugin::accept(void* listen_comm) {
  void* comm = nullptr;
  ncclNetDeviceHandle_v8_t* dev_comm = nullptr;
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->accept(listen_comm, &comm, &dev_comm);
      break;
    case Api::V9:
      result = v9_->accept(listen_comm, &comm, &dev_comm);
      break;
    case Api::V10:
      result = v10_->accept(listen_comm, &comm, &dev_comm);
      break;
    case Api::V11:
      result = v11_->accept(listen_comm, &comm, &dev_comm);
      break;
  }
  check(result, "accept", "listenComm " + hex(listen_comm));
  if (dev_comm != nullptr) {
    throw BenchError("plugin " + name_ + " accept returned a device handle (network offload); " +
                     "roce-bench, like NCCL's host path, expects none");
  }
  return comm;
}

void* NetPlugin::reg_mr(void* comm, void* data, std::size_t size, int type) {
  void* mhandle = nullptr;
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->regMr(comm, data, size, type, &mhandle);
      break;
    case Api::V9:
      result = v9_->regMr(comm, data, size, type, &mhandle);
      break;
    case Api::V10:
      result = v10_->regMr(comm, data, size, type, &mhandle);
      break;
    case Api::V11:
      result = v11_->regMr(comm, data, size, type, &mhandle);
      break;
  }
  check(result, "regMr",
        hex(data) + ", " + std::to_string(size) + " bytes, " + ptr_support_text(type));
  return mhandle;
}

bool NetPlugin::has_reg_mr_dmabuf() const {
  switch (api_) {
    case Api::V8:
      return v8_->regMrDmaBuf != nullptr;
    case Api::V9:
      return v9_->regMrDmaBuf != nullptr;
    case Api::V10:
      return v10_->regMrDmaBuf != nullptr;
    case Api::V11:
      return v11_->regMrDmaBuf != nullptr;
  }
  return false;
}

void* NetPlugin::reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type,
                               std::uint64_t offset, int fd) {
  if (!has_reg_mr_dmabuf()) {
    throw BenchError("plugin " + name_ + " has no regMrDmaBuf; use --dmabuf off");
  }
  void* mhandle = nullptr;
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->regMrDmaBuf(comm, data, size, type, offset, fd, &mhandle);
      break;
    case Api::V9:
      result = v9_->regMrDmaBuf(comm, data, size, type, offset, fd, &mhandle);
      break;
    case Api::V10:
      result = v10_->regMrDmaBuf(comm, data, size, type, offset, fd, &mhandle);
      break;
    case Api::V11:
      result = v11_->regMrDmaBuf(comm, data, size, type, offset, fd, &mhandle);
      break;
  }
  check(result, "regMrDmaBuf",
        hex(data) + ", " + std::to_string(size) + " bytes, fd " + std::to_string(fd));
  return mhandle;
}

void NetPlugin::dereg_mr(void* comm, void* mhandle) {
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->deregMr(comm, mhandle);
      break;
    case Api::V9:
      result = v9_->deregMr(comm, mhandle);
      break;
    case Api::V10:
      result = v10_->deregMr(comm, mhandle);
      break;
    case Api::V11:
      result = v11_->deregMr(comm, mhandle);
      break;
  }
  check(result, "deregMr", "mhandle " + hex(mhandle));
}

void* NetPlugin::isend(void* send_comm, void* data, std::size_t size, int tag, void* mhandle) {
  void* request = nullptr;
  ncclResult_t result = ncclSuccess;
  ++counters_.isend;
  switch (api_) {
    case Api::V8:
      if (size > static_cast<std::size_t>(INT_MAX)) {
        throw BenchError("isend of " + std::to_string(size) + " bytes does not fit v8's int size");
      }
      result = v8_->isend(send_comm, data, static_cast<int>(size), tag, mhandle, &request);
      break;
    case Api::V9:
      result = v9_->isend(send_comm, data, size, tag, mhandle, &request);
      break;
    case Api::V10:
      result = v10_->isend(send_comm, data, size, tag, mhandle, profiler_handle(), &request);
      break;
    case Api::V11:
      result = v11_->isend(send_comm, data, size, tag, mhandle, profiler_handle(), &request);
      break;
  }
  if (result != ncclSuccess) {
    check(result, "isend", std::to_string(size) + " bytes, tag " + std::to_string(tag));
  }
  if (request == nullptr) {
    ++counters_.isend_retry;
  } else if (api_ == Api::V10 || api_ == Api::V11) {
    profiler_note_send(size);
  }
  return request;
}

void* NetPlugin::irecv(void* recv_comm, void* data, std::size_t size, int tag, void* mhandle,
                       bool ll_hint) {
  // NCCL stores the LL hint only for v9+ (its v6..v8 shims clear it first).
  const bool hint = ll_hint && api_ != Api::V8;
  void* request = hint ? kLlHint : nullptr;
  void* datas[1] = {data};
  int tags[1] = {tag};
  void* mhandles[1] = {mhandle};
  ncclResult_t result = ncclSuccess;
  ++counters_.irecv;
  counters_.ll_hints += hint ? 1 : 0;
  switch (api_) {
    case Api::V8: {
      if (size > static_cast<std::size_t>(INT_MAX)) {
        throw BenchError("irecv of " + std::to_string(size) + " bytes does not fit v8's int size");
      }
      int sizes[1] = {static_cast<int>(size)};
      result = v8_->irecv(recv_comm, 1, datas, sizes, tags, mhandles, &request);
      break;
    }
    case Api::V9: {
      std::size_t sizes[1] = {size};
      result = v9_->irecv(recv_comm, 1, datas, sizes, tags, mhandles, &request);
      break;
    }
    case Api::V10: {
      std::size_t sizes[1] = {size};
      void* phandles[1] = {profiler_handle()};
      result = v10_->irecv(recv_comm, 1, datas, sizes, tags, mhandles, phandles, &request);
      break;
    }
    case Api::V11: {
      std::size_t sizes[1] = {size};
      void* phandles[1] = {profiler_handle()};
      result = v11_->irecv(recv_comm, 1, datas, sizes, tags, mhandles, phandles, &request);
      break;
    }
  }
  if (result != ncclSuccess) {
    check(result, "irecv", std::to_string(size) + " bytes, tag " + std::to_string(tag));
  }
  if (hint && request == kLlHint) {
    throw BenchError("plugin " + name_ + " irecv left NCCL's LL hint (void*)0x1 in *request; " +
                     "a plugin must always overwrite it (a request, or NULL to be called " +
                     "again), or NCCL treats the receive as posted");
  }
  if (request == nullptr) {
    ++counters_.irecv_retry;
  }
  return request;
}

bool NetPlugin::has_iflush() const {
  switch (api_) {
    case Api::V8:
      return v8_->iflush != nullptr;
    case Api::V9:
      return v9_->iflush != nullptr;
    case Api::V10:
      return v10_->iflush != nullptr;
    case Api::V11:
      return v11_->iflush != nullptr;
  }
  return false;
}

void* NetPlugin::iflush(void* recv_comm, void* data, int size, void* mhandle) {
  if (!has_iflush()) {
    throw BenchError("plugin " + name_ + " has no iflush but a flush is needed " +
                     "(GPU receive with forceFlush or NCCL_NET_FORCE_FLUSH); use --flush never " +
                     "to measure without it");
  }
  void* request = nullptr;
  void* datas[1] = {data};
  int sizes[1] = {size};
  void* mhandles[1] = {mhandle};
  ncclResult_t result = ncclSuccess;
  ++counters_.iflush;
  switch (api_) {
    case Api::V8:
      result = v8_->iflush(recv_comm, 1, datas, sizes, mhandles, &request);
      break;
    case Api::V9:
      result = v9_->iflush(recv_comm, 1, datas, sizes, mhandles, &request);
      break;
    case Api::V10:
      result = v10_->iflush(recv_comm, 1, datas, sizes, mhandles, &request);
      break;
    case Api::V11:
      result = v11_->iflush(recv_comm, 1, datas, sizes, mhandles, &request);
      break;
  }
  check(result, "iflush", std::to_string(size) + " bytes");
  return request;
}

bool NetPlugin::test(void* request, int* size) {
  int done = 0;
  ncclResult_t result = ncclSuccess;
  ++counters_.test;
  switch (api_) {
    case Api::V8:
      result = v8_->test(request, &done, size);
      break;
    case Api::V9:
      result = v9_->test(request, &done, size);
      break;
    case Api::V10:
      result = v10_->test(request, &done, size);
      break;
    case Api::V11:
      result = v11_->test(request, &done, size);
      break;
  }
  if (result != ncclSuccess) {
    check(result, "test", "request " + hex(request));
  }
  if (done == 0) {
    ++counters_.test_pending;
  }
  return done != 0;
}

void NetPlugin::close_send(void* comm) {
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->closeSend(comm);
      break;
    case Api::V9:
      result = v9_->closeSend(comm);
      break;
    case Api::V10:
      result = v10_->closeSend(comm);
      break;
    case Api::V11:
      result = v11_->closeSend(comm);
      break;
  }
  check(result, "closeSend", hex(comm));
}

void NetPlugin::close_recv(void* comm) {
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->closeRecv(comm);
      break;
    case Api::V9:
      result = v9_->closeRecv(comm);
      break;
    case Api::V10:
      result = v10_->closeRecv(comm);
      break;
    case Api::V11:
      result = v11_->closeRecv(comm);
      break;
  }
  check(result, "closeRecv", hex(comm));
}

void NetPlugin::close_listen(void* comm) {
  ncclResult_t result = ncclSuccess;
  switch (api_) {
    case Api::V8:
      result = v8_->closeListen(comm);
      break;
    case Api::V9:
      result = v9_->closeListen(comm);
      break;
    case Api::V10:
      result = v10_->closeListen(comm);
      break;
    case Api::V11:
      result = v11_->closeListen(comm);
      break;
  }
  check(result, "closeListen", hex(comm));
}

}  // namespace roce::bench
