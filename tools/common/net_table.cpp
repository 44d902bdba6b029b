// The version-neutral ncclNet table: see net_table.h.
#include "net_table.h"

#include <dlfcn.h>

#include <cstdio>
#include <stdexcept>
#include <type_traits>

namespace roce::tools {
namespace {

// What NCCL reads before init: the name (for NCCL_NET and its log) and init itself.
template <typename Table>
const char* missing_before_init(const Table& t) {
  return t.name == nullptr ? "name" : t.init == nullptr ? "init" : nullptr;
}

template <typename Table>
std::string missing_after_init(const Table& t) {
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
  return missing;
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

std::optional<NetApi> parse_net_api(const std::string& text) {
  for (NetApi api : {NetApi::V8, NetApi::V9, NetApi::V10, NetApi::V11}) {
    if (text == net_api_name(api)) {
      return api;
    }
  }
  return std::nullopt;
}

std::string net_api_name(NetApi api) {
  return "v" + std::to_string(static_cast<int>(api));
}

const char* net_table_symbol(NetApi api) {
  switch (api) {
    case NetApi::V8:
      return NCCL_NET_PLUGIN_SYMBOL_V8;
    case NetApi::V9:
      return NCCL_NET_PLUGIN_SYMBOL_V9;
    case NetApi::V10:
      return NCCL_NET_PLUGIN_SYMBOL_V10;
    case NetApi::V11:
      return NCCL_NET_PLUGIN_SYMBOL_V11;
  }
  return "?";
}

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

NetTable::NetTable(const std::string& path, NetApi api) : path_(path), api_(api) {
  int flags = RTLD_NOW | RTLD_LOCAL;
#if defined(__SANITIZE_ADDRESS__)
  // Under LeakSanitizer keep the image mapped at dlclose: the statically linked libstdc++'s
  // exception pool and the plugin's never-destroyed singletons would otherwise be reported as
  // leaks of an unmapped module. The ci build (no sanitizer) exercises the real unload.
  flags |= RTLD_NODELETE;
#endif
  library_ = dlopen(path.c_str(), flags);
  if (library_ == nullptr) {
    const char* why = dlerror();
    throw std::runtime_error("cannot load the plugin " + path + ": " +
                             (why != nullptr ? why : "?"));
  }
  void* table = dlsym(library_, net_table_symbol(api));
  switch (api) {
    case NetApi::V8:
      v8_ = static_cast<const ncclNet_v8_t*>(table);
      break;
    case NetApi::V9:
      v9_ = static_cast<const ncclNet_v9_t*>(table);
      break;
    case NetApi::V10:
      v10_ = static_cast<const ncclNet_v10_t*>(table);
      break;
    case NetApi::V11:
      v11_ = static_cast<const ncclNet_v11_t*>(table);
      break;
  }
  const char* missing = nullptr;
  if (table == nullptr) {
    std::string exported;
    for (NetApi other : {NetApi::V8, NetApi::V9, NetApi::V10, NetApi::V11}) {
      if (dlsym(library_, net_table_symbol(other)) != nullptr) {
        exported += (exported.empty() ? "" : ", ") + std::string(net_table_symbol(other));
      }
    }
    dlclose(library_);
    throw std::runtime_error(
        path + " does not export " + net_table_symbol(api) +
        " (it exports: " + (exported.empty() ? "no ncclNetPlugin_v8..v11 table" : exported) + ")");
  }
  missing = v8_    ? missing_before_init(*v8_)
            : v9_  ? missing_before_init(*v9_)
            : v10_ ? missing_before_init(*v10_)
                   : missing_before_init(*v11_);
  if (missing != nullptr) {
    dlclose(library_);
    throw std::runtime_error(path + " " + net_table_symbol(api) + " has a NULL " + missing +
                             "; NCCL could not load it");
  }
}

NetTable::~NetTable() {
  if (initialized_) {
    finalize();
  }
  dlclose(library_);
}

// Calls the same-named member of whichever table is loaded (all four have it, same signature).
#define ROCE_NET_DISPATCH(member, ...) \
  (v8_    ? v8_->member(__VA_ARGS__)   \
   : v9_  ? v9_->member(__VA_ARGS__)   \
   : v10_ ? v10_->member(__VA_ARGS__)  \
          : v11_->member(__VA_ARGS__))
#define ROCE_NET_MEMBER(member)     \
  (v8_    ? v8_->member != nullptr  \
   : v9_  ? v9_->member != nullptr  \
   : v10_ ? v10_->member != nullptr \
          : v11_->member != nullptr)

std::string NetTable::name() const {
  const char* name = v8_ ? v8_->name : v9_ ? v9_->name : v10_ ? v10_->name : v11_->name;
  return name != nullptr ? name : "";
}

std::string NetTable::missing_members() const {
  return v8_    ? missing_after_init(*v8_)
         : v9_  ? missing_after_init(*v9_)
         : v10_ ? missing_after_init(*v10_)
                : missing_after_init(*v11_);
}

bool NetTable::has_reg_mr_dmabuf() const {
  return ROCE_NET_MEMBER(regMrDmaBuf);
}

bool NetTable::has_iflush() const {
  return ROCE_NET_MEMBER(iflush);
}

ncclResult_t NetTable::init(ncclDebugLogger_t logger, int traffic_class, std::uint64_t comm_id,
                            ncclProfilerCallback_t profiler) {
  comm_config_.trafficClass = traffic_class;
  ncclResult_t result;
  if (v8_) {
    result = v8_->init(logger);
  } else if (v9_) {
    result = v9_->init(logger);
  } else if (v10_) {
    result = v10_->init(logger, profiler);
  } else {
    ncclNetCommConfig_v11_t config{traffic_class};
    result = v11_->init(&ctx_, comm_id, &config, logger, profiler);
  }
  initialized_ = result == ncclSuccess;
  return result;
}

ncclResult_t NetTable::finalize() {
  initialized_ = false;
  if (v11_ == nullptr || ctx_ == nullptr) {
    return ncclSuccess;
  }
  const ncclResult_t result = v11_->finalize(ctx_);
  ctx_ = nullptr;
  return result;
}

ncclResult_t NetTable::devices(int* ndev) {
  return ROCE_NET_DISPATCH(devices, ndev);
}

ncclResult_t NetTable::properties(int dev, NetProperties* out) {
  ncclResult_t result;
  if (v8_) {
    ncclNetProperties_v8_t p{};
    result = v8_->getProperties(dev, &p);
    if (result == ncclSuccess) {
      *out = convert_common(p);
    }
  } else if (v9_) {
    ncclNetProperties_v9_t p{};
    result = v9_->getProperties(dev, &p);
    if (result == ncclSuccess) {
      *out = convert_v9_plus(p);
    }
  } else if (v10_) {
    ncclNetProperties_v10_t p{};
    result = v10_->getProperties(dev, &p);
    if (result == ncclSuccess) {
      *out = convert_v9_plus(p);
    }
  } else {
    ncclNetProperties_v11_t p{};
    result = v11_->getProperties(dev, &p);
    if (result == ncclSuccess) {
      *out = convert_v9_plus(p);
      out->max_multi_request_size = p.maxMultiRequestSize;
    }
  }
  return result;
}

ncclResult_t NetTable::make_vdevice(int* d, const std::vector<int>& devs) {
  ncclNetVDeviceProps_v9_t props{};
  props.ndevs = static_cast<int>(devs.size());
  for (size_t i = 0; i < devs.size() && i < NCCL_NET_MAX_DEVS_PER_NIC; ++i) {
    props.devs[i] = devs[i];
  }
  if (v8_) {
    return ncclInvalidUsage;  // v8 has no virtual devices
  }
  return v9_    ? v9_->makeVDevice(d, &props)
         : v10_ ? v10_->makeVDevice(d, &props)
                : v11_->makeVDevice(d, &props);
}

ncclResult_t NetTable::listen(int dev, void* handle, void** listen_comm) {
  if (v11_) {
    return v11_->listen(ctx_, dev, handle, listen_comm);
  }
  return v8_   ? v8_->listen(dev, handle, listen_comm)
         : v9_ ? v9_->listen(dev, handle, listen_comm)
               : v10_->listen(dev, handle, listen_comm);
}

ncclResult_t NetTable::connect(int dev, void* handle, void** send_comm,
                               NetDeviceHandle** dev_comm) {
  if (v8_) {
    return v8_->connect(dev, handle, send_comm, dev_comm);
  }
  if (v9_) {
    return v9_->connect(dev, handle, send_comm, dev_comm);
  }
  if (v10_) {
    return v10_->connect(dev, &comm_config_, handle, send_comm, dev_comm);
  }
  return v11_->connect(ctx_, dev, handle, send_comm, dev_comm);
}

ncclResult_t NetTable::accept(void* listen_comm, void** recv_comm, NetDeviceHandle** dev_comm) {
  return ROCE_NET_DISPATCH(accept, listen_comm, recv_comm, dev_comm);
}

ncclResult_t NetTable::close_send(void* comm) {
  return ROCE_NET_DISPATCH(closeSend, comm);
}

ncclResult_t NetTable::close_recv(void* comm) {
  return ROCE_NET_DISPATCH(closeRecv, comm);
}

ncclResult_t NetTable::close_listen(void* comm) {
  return ROCE_NET_DISPATCH(closeListen, comm);
}

ncclResult_t NetTable::reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle) {
  return ROCE_NET_DISPATCH(regMr, comm, data, size, type, mhandle);
}

ncclResult_t NetTable::reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type,
                                     std::uint64_t offset, int fd, void** mhandle) {
  return ROCE_NET_DISPATCH(regMrDmaBuf, comm, data, size, type, offset, fd, mhandle);
}

ncclResult_t NetTable::dereg_mr(void* comm, void* mhandle) {
  return ROCE_NET_DISPATCH(deregMr, comm, mhandle);
}

ncclResult_t NetTable::isend(void* comm, void* data, std::size_t size, int tag, void* mhandle,
                             void* phandle, void** request) {
  if (v8_) {
    return v8_->isend(comm, data, static_cast<int>(size), tag, mhandle, request);
  }
  if (v9_) {
    return v9_->isend(comm, data, size, tag, mhandle, request);
  }
  return v10_ ? v10_->isend(comm, data, size, tag, mhandle, phandle, request)
              : v11_->isend(comm, data, size, tag, mhandle, phandle, request);
}

ncclResult_t NetTable::irecv(void* comm, int n, void** data, const std::size_t* sizes,
                             const int* tags, void** mhandles, void** phandles, void** request) {
  // The tables take non-const arrays; NCCL passes its own copies, so do we. Room for more than
  // maxRecvs (8): the caller-mistake tests pass n = 9 for the plugin to refuse.
  constexpr int kMax = NCCL_NET_MAX_REQUESTS;
  std::array<std::size_t, kMax> wide{};
  std::array<int, kMax> narrow{};
  std::array<int, kMax> tag_copy{};
  std::array<void*, kMax> no_phandles{};
  for (int i = 0; i < n && i < kMax; ++i) {
    const auto k = static_cast<std::size_t>(i);
    wide[k] = sizes[i];
    narrow[k] = static_cast<int>(sizes[i]);
    tag_copy[k] = tags[i];
  }
  void** ph = phandles != nullptr ? phandles : no_phandles.data();
  if (v8_) {
    return v8_->irecv(comm, n, data, narrow.data(), tag_copy.data(), mhandles, request);
  }
  if (v9_) {
    return v9_->irecv(comm, n, data, wide.data(), tag_copy.data(), mhandles, request);
  }
  return v10_ ? v10_->irecv(comm, n, data, wide.data(), tag_copy.data(), mhandles, ph, request)
              : v11_->irecv(comm, n, data, wide.data(), tag_copy.data(), mhandles, ph, request);
}

ncclResult_t NetTable::iflush(void* comm, int n, void** data, const int* sizes, void** mhandles,
                              void** request) {
  std::array<int, NCCL_NET_MAX_REQUESTS> copy{};
  for (int i = 0; i < n && i < NCCL_NET_MAX_REQUESTS; ++i) {
    copy[static_cast<std::size_t>(i)] = sizes[i];
  }
  return ROCE_NET_DISPATCH(iflush, comm, n, data, copy.data(), mhandles, request);
}

ncclResult_t NetTable::test(void* request, int* done, int* sizes) {
  return ROCE_NET_DISPATCH(test, request, done, sizes);
}

ncclResult_t NetTable::irecv_consumed(void* comm, int n, void* request) {
  return ROCE_NET_DISPATCH(irecvConsumed, comm, n, request);
}

}  // namespace roce::tools
