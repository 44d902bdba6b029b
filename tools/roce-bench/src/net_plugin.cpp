// roce-bench's layer over the shared ncclNet table: see net_plugin.h.
#include "net_plugin.h"

#include <climits>
#include <cstdio>
#include <stdexcept>
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

}  // namespace

NetPlugin::NetPlugin(const std::string& path, Api api) : path_(path), api_(api) {
  try {
    table_ = std::make_unique<tools::NetTable>(path, api);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    throw BenchError(what + (what.find("does not export") != std::string::npos
                                 ? "; pick another --api"
                             : what.find("cannot load") != std::string::npos
                                 ? "; build it (cmake --build build/<preset> --target "
                                   "nccl_net_roce) or pass --plugin PATH"
                                 : ""));
  }
  name_ = table_->name();
}

NetPlugin::~NetPlugin() {
  try {
    finalize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roce-bench: %s\n", e.what());
  }
}

std::string NetPlugin::symbol() const {
  return tools::net_table_symbol(api_);
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
  check(table_->init(logger, traffic_class, comm_id, profiler_callback()), "init", "");
  initialized_ = true;
  // A plugin may fill in the rest of its table inside init (nccl-rdma-sharp-plugins picks IB or
  // UCX there and copies that transport's members in), so the members NCCL calls unconditionally
  // are checked now, as NCCL first calls them now; a NULL one would crash NCCL.
  if (const std::string missing = table_->missing_members(); !missing.empty()) {
    throw BenchError(path_ + " " + symbol() + " has NULL members after init: " + missing +
                     "; NCCL would crash on them");
  }
  name_ = table_->name();  // it may have a new name now (the sharp plugin's says "IB")
}

void NetPlugin::finalize() {
  if (!initialized_) {
    return;
  }
  initialized_ = false;
  const void* ctx = table_->context();
  check(table_->finalize(), "finalize", "ctx " + hex(ctx));
}

int NetPlugin::devices() {
  int n = 0;
  check(table_->devices(&n), "devices", "");
  return n;
}

NetProperties NetPlugin::properties(int dev) {
  NetProperties out;
  check(table_->properties(dev, &out), "getProperties", "dev " + std::to_string(dev));
  if (api_ <= Api::V8) {
    out.max_p2p_bytes = std::size_t{1} << 30;  // NCCL's v6..v8 shims
    out.max_coll_bytes = std::size_t{512} << 20;
  }
  return out;
}

int NetPlugin::make_vdevice(const std::vector<int>& members) {
  std::string list;
  for (const int m : members) {
    list += (list.empty() ? "" : ",") + std::to_string(m);
  }
  if (api_ < Api::V9) {
    throw BenchError(symbol() + " has no makeVDevice (ncclNet v9 and later have it); pick " +
                     "--api v9..v12 for --vdevice " + list);
  }
  int dev = -1;
  check(table_->make_vdevice(&dev, members), "makeVDevice", "devices " + list);
  if (dev < 0) {
    throw BenchError("plugin " + name_ + " makeVDevice(devices " + list +
                     ") returned ncclSuccess without a device index");
  }
  return dev;
}

void* NetPlugin::listen(int dev, NetHandle& handle) {
  void* comm = nullptr;
  check(table_->listen(dev, handle.data(), &comm), "listen", "dev " + std::to_string(dev));
  if (comm == nullptr) {
    throw BenchError("plugin " + name_ + " listen(dev " + std::to_string(dev) +
                     ") returned ncclSuccess with a NULL listenComm; NCCL requires a comm");
  }
  return comm;
}

void* NetPlugin::connect(int dev, NetHandle& handle) {
  void* comm = nullptr;
  tools::NetDeviceHandle* dev_comm = nullptr;
  check(table_->connect(dev, handle.data(), &comm, &dev_comm), "connect",
        "dev " + std::to_string(dev));
  if (dev_comm != nullptr) {
    throw BenchError("plugin " + name_ +
                     " connect returned a device handle (network offload); roce-bench, like "
                     "NCCL's host path, expects none");
  }
  return comm;
}

void* NetPlugin::accept(void* listen_comm) {
  void* comm = nullptr;
  tools::NetDeviceHandle* dev_comm = nullptr;
  check(table_->accept(listen_comm, &comm, &dev_comm), "accept", "listenComm " + hex(listen_comm));
  if (dev_comm != nullptr) {
    throw BenchError("plugin " + name_ + " accept returned a device handle (network offload); " +
                     "roce-bench, like NCCL's host path, expects none");
  }
  return comm;
}

void* NetPlugin::reg_mr(void* comm, void* data, std::size_t size, int type) {
  void* mhandle = nullptr;
  check(table_->reg_mr(comm, data, size, type, &mhandle), "regMr",
        hex(data) + ", " + std::to_string(size) + " bytes, " + ptr_support_text(type));
  return mhandle;
}

bool NetPlugin::has_reg_mr_dmabuf() const {
  return table_->has_reg_mr_dmabuf();
}

void* NetPlugin::reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type,
                               std::uint64_t offset, int fd) {
  if (!has_reg_mr_dmabuf()) {
    throw BenchError("plugin " + name_ + " has no regMrDmaBuf; use --dmabuf off");
  }
  void* mhandle = nullptr;
  check(table_->reg_mr_dmabuf(comm, data, size, type, offset, fd, &mhandle), "regMrDmaBuf",
        hex(data) + ", " + std::to_string(size) + " bytes, fd " + std::to_string(fd));
  return mhandle;
}

void NetPlugin::dereg_mr(void* comm, void* mhandle) {
  check(table_->dereg_mr(comm, mhandle), "deregMr", "mhandle " + hex(mhandle));
}

void* NetPlugin::isend(void* send_comm, void* data, std::size_t size, int tag, void* mhandle) {
  if (api_ <= Api::V8 && size > static_cast<std::size_t>(INT_MAX)) {
    throw BenchError("isend of " + std::to_string(size) + " bytes does not fit v6..v8's int size");
  }
  void* request = nullptr;
  ++counters_.isend;
  const ncclResult_t result =
      table_->isend(send_comm, data, size, tag, mhandle, profiler_handle(), &request);
  if (result != ncclSuccess) {
    check(result, "isend", std::to_string(size) + " bytes, tag " + std::to_string(tag));
  }
  if (request == nullptr) {
    ++counters_.isend_retry;
  } else if (api_ >= Api::V10) {
    profiler_note_send(size);
  }
  return request;
}

void* NetPlugin::irecv(void* recv_comm, void* data, std::size_t size, int tag, void* mhandle,
                       bool ll_hint) {
  if (api_ <= Api::V8 && size > static_cast<std::size_t>(INT_MAX)) {
    throw BenchError("irecv of " + std::to_string(size) + " bytes does not fit v6..v8's int size");
  }
  // NCCL stores the LL hint only for v9+ (its v6..v8 shims clear it first).
  const bool hint = ll_hint && api_ >= Api::V9;
  void* request = hint ? kLlHint : nullptr;
  void* datas[1] = {data};
  const std::size_t sizes[1] = {size};
  const int tags[1] = {tag};
  void* mhandles[1] = {mhandle};
  void* phandles[1] = {profiler_handle()};
  ++counters_.irecv;
  counters_.ll_hints += hint ? 1 : 0;
  const ncclResult_t result =
      table_->irecv(recv_comm, 1, datas, sizes, tags, mhandles, phandles, &request);
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
  return table_->has_iflush();
}

void* NetPlugin::iflush(void* recv_comm, void* data, int size, void* mhandle) {
  if (!has_iflush()) {
    throw BenchError("plugin " + name_ + " has no iflush but a flush is needed " +
                     "(GPU receive with forceFlush or NCCL_NET_FORCE_FLUSH); use --flush never " +
                     "to measure without it");
  }
  void* request = nullptr;
  void* datas[1] = {data};
  const int sizes[1] = {size};
  void* mhandles[1] = {mhandle};
  ++counters_.iflush;
  check(table_->iflush(recv_comm, 1, datas, sizes, mhandles, &request), "iflush",
        std::to_string(size) + " bytes");
  return request;
}

bool NetPlugin::test(void* request, int* size) {
  int done = 0;
  ++counters_.test;
  const ncclResult_t result = table_->test(request, &done, size);
  if (result != ncclSuccess) {
    check(result, "test", "request " + hex(request));
  }
  if (done == 0) {
    ++counters_.test_pending;
  }
  return done != 0;
}

void NetPlugin::close_send(void* comm) {
  check(table_->close_send(comm), "closeSend", hex(comm));
}

void NetPlugin::close_recv(void* comm) {
  check(table_->close_recv(comm), "closeRecv", hex(comm));
}

void NetPlugin::close_listen(void* comm) {
  check(table_->close_listen(comm), "closeListen", hex(comm));
}

}  // namespace roce::bench
