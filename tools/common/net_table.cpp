// The version-neutral ncclNet table: see net_table.h.
#include "net_table.h"

#include <dlfcn.h>

#include <cstdio>
#include <stdexcept>
#include <tuple>
#include <type_traits>

namespace roce::tools {
namespace {

// The table a variant alternative points to.
template <typename TablePtr>
using TableOf = std::remove_const_t<std::remove_pointer_t<TablePtr>>;

// Which generation a table belongs to: what its functions look like.
template <typename T>
inline constexpr bool kHasOffload = !std::is_same_v<T, ncclNet_v6_t>;  // devComm, irecvConsumed
template <typename T>
inline constexpr bool kIntSizes =  // int sizes in isend and irecv
    std::is_same_v<T, ncclNet_v6_t> || std::is_same_v<T, ncclNet_v7_t> ||
    std::is_same_v<T, ncclNet_v8_t>;
template <typename T>
inline constexpr bool kHasContext =  // a per-communicator context from init; finalize
    std::is_same_v<T, ncclNet_v11_t> || std::is_same_v<T, ncclNet_v12_t>;
template <typename T>
inline constexpr bool kHasProfiler =  // init takes the profiler; isend/irecv take its handles
    kHasContext<T> || std::is_same_v<T, ncclNet_v10_t>;
template <typename T>
inline constexpr bool kHasVDevices = !kIntSizes<T>;  // makeVDevice, from v9

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
  if constexpr (kHasContext<Table>) {
    need(reinterpret_cast<const void*>(t.finalize), "finalize (NCCL calls it unchecked)");
  }
  return missing;
}

// Each version's properties extend an earlier version's (see the plugin's abi/setup_adapters).
template <typename Props>
NetProperties convert(const Props& p) {
  NetProperties out;
  out.name = p.name != nullptr ? p.name : "";
  if (p.pciPath != nullptr) {
    out.pci_path = p.pciPath;
  }
  out.guid = p.guid;
  out.ptr_support = p.ptrSupport;
  out.speed_mbps = p.speed;
  out.port = p.port;
  out.latency_us = p.latency;
  out.max_comms = p.maxComms;
  out.max_recvs = p.maxRecvs;
  if constexpr (requires { p.netDeviceType; }) {  // v7+
    out.net_device_type = static_cast<int>(p.netDeviceType);
    out.net_device_version = p.netDeviceVersion;
  }
  if constexpr (requires { p.regIsGlobal; }) {  // v8+
    out.reg_is_global = p.regIsGlobal;
  }
  if constexpr (requires { p.vProps; }) {  // v9+
    out.force_flush = p.forceFlush;
    out.vdev_count = p.vProps.ndevs;
    out.max_p2p_bytes = p.maxP2pBytes;
    out.max_coll_bytes = p.maxCollBytes;
  }
  if constexpr (requires { p.maxMultiRequestSize; }) {  // v11+
    out.max_multi_request_size = p.maxMultiRequestSize;
  }
  if constexpr (requires { p.railId; }) {  // v12
    out.rail_id = p.railId;
    out.plane_id = p.planeId;
  }
  return out;
}

// The type of argument I of a table member (a function pointer).
template <typename Fn>
struct Arguments;
template <typename R, typename... A>
struct Arguments<R (*)(A...)> {
  using type = std::tuple<A...>;
};
template <std::size_t I, typename Fn>
using ArgumentOf = std::tuple_element_t<I, typename Arguments<Fn>::type>;

// What getProperties fills and makeVDevice reads, per table.
template <typename T>
using PropsOf = std::remove_pointer_t<ArgumentOf<1, decltype(T::getProperties)>>;
template <typename T>
using VDevicePropsOf = std::remove_pointer_t<ArgumentOf<1, decltype(T::makeVDevice)>>;

}  // namespace

std::optional<NetApi> parse_net_api(const std::string& text) {
  for (NetApi api : kNetApis) {
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
    case NetApi::V6:
      return NCCL_NET_PLUGIN_SYMBOL_V6;
    case NetApi::V7:
      return NCCL_NET_PLUGIN_SYMBOL_V7;
    case NetApi::V8:
      return NCCL_NET_PLUGIN_SYMBOL_V8;
    case NetApi::V9:
      return NCCL_NET_PLUGIN_SYMBOL_V9;
    case NetApi::V10:
      return NCCL_NET_PLUGIN_SYMBOL_V10;
    case NetApi::V11:
      return NCCL_NET_PLUGIN_SYMBOL_V11;
    case NetApi::V12:
      return NCCL_NET_PLUGIN_SYMBOL_V12;
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
  if (table == nullptr) {
    std::string exported;
    for (NetApi other : kNetApis) {
      if (dlsym(library_, net_table_symbol(other)) != nullptr) {
        exported += (exported.empty() ? "" : ", ") + std::string(net_table_symbol(other));
      }
    }
    dlclose(library_);
    throw std::runtime_error(
        path + " does not export " + net_table_symbol(api) +
        " (it exports: " + (exported.empty() ? "no ncclNetPlugin_v6..v12 table" : exported) + ")");
  }
  switch (api) {
    case NetApi::V6:
      table_ = static_cast<const ncclNet_v6_t*>(table);
      break;
    case NetApi::V7:
      table_ = static_cast<const ncclNet_v7_t*>(table);
      break;
    case NetApi::V8:
      table_ = static_cast<const ncclNet_v8_t*>(table);
      break;
    case NetApi::V9:
      table_ = static_cast<const ncclNet_v9_t*>(table);
      break;
    case NetApi::V10:
      table_ = static_cast<const ncclNet_v10_t*>(table);
      break;
    case NetApi::V11:
      table_ = static_cast<const ncclNet_v11_t*>(table);
      break;
    case NetApi::V12:
      table_ = static_cast<const ncclNet_v12_t*>(table);
      break;
  }
  const char* missing = std::visit([](auto t) { return missing_before_init(*t); }, table_);
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

std::string NetTable::name() const {
  const char* name = std::visit([](auto t) { return t->name; }, table_);
  return name != nullptr ? name : "";
}

std::string NetTable::missing_members() const {
  return std::visit([](auto t) { return missing_after_init(*t); }, table_);
}

bool NetTable::has_reg_mr_dmabuf() const {
  return std::visit([](auto t) { return t->regMrDmaBuf != nullptr; }, table_);
}

bool NetTable::has_iflush() const {
  return std::visit([](auto t) { return t->iflush != nullptr; }, table_);
}

ncclResult_t NetTable::init(ncclDebugLogger_t logger, int traffic_class, std::uint64_t comm_id,
                            ncclProfilerCallback_t profiler) {
  comm_config_.trafficClass = traffic_class;
  const ncclResult_t result = std::visit(
      [&](auto t) {
        using T = TableOf<decltype(t)>;
        if constexpr (kHasContext<T>) {
          ncclNetCommConfig_v11_t config{traffic_class};
          return t->init(&ctx_, comm_id, &config, logger, profiler);
        } else if constexpr (kHasProfiler<T>) {
          return t->init(logger, profiler);
        } else {
          return t->init(logger);
        }
      },
      table_);
  initialized_ = result == ncclSuccess;
  return result;
}

ncclResult_t NetTable::finalize() {
  // std::get_if rather than std::visit: the destructor calls this, and get_if cannot throw.
  initialized_ = false;
  if (ctx_ == nullptr) {
    return ncclSuccess;
  }
  ncclResult_t result = ncclSuccess;
  if (const auto* v11 = std::get_if<const ncclNet_v11_t*>(&table_)) {
    result = (*v11)->finalize(ctx_);
  } else if (const auto* v12 = std::get_if<const ncclNet_v12_t*>(&table_)) {
    result = (*v12)->finalize(ctx_);
  }
  ctx_ = nullptr;
  return result;
}

ncclResult_t NetTable::devices(int* ndev) {
  return std::visit([&](auto t) { return t->devices(ndev); }, table_);
}

ncclResult_t NetTable::properties(int dev, NetProperties* out) {
  return std::visit(
      [&](auto t) {
        PropsOf<TableOf<decltype(t)>> p{};
        const ncclResult_t result = t->getProperties(dev, &p);
        if (result == ncclSuccess) {
          *out = convert(p);
        }
        return result;
      },
      table_);
}

ncclResult_t NetTable::make_vdevice(int* d, const std::vector<int>& devs) {
  return std::visit(
      [&](auto t) {
        using T = TableOf<decltype(t)>;
        if constexpr (kHasVDevices<T>) {
          VDevicePropsOf<T> props{};
          constexpr std::size_t kCapacity = std::extent_v<decltype(VDevicePropsOf<T>::devs)>;
          props.ndevs = static_cast<int>(devs.size());
          for (std::size_t i = 0; i < devs.size() && i < kCapacity; ++i) {
            props.devs[i] = devs[i];
          }
          return t->makeVDevice(d, &props);
        } else {
          return ncclInvalidUsage;  // no virtual devices before v9
        }
      },
      table_);
}

ncclResult_t NetTable::listen(int dev, void* handle, void** listen_comm) {
  return std::visit(
      [&](auto t) {
        if constexpr (kHasContext<TableOf<decltype(t)>>) {
          return t->listen(ctx_, dev, handle, listen_comm);
        } else {
          return t->listen(dev, handle, listen_comm);
        }
      },
      table_);
}

ncclResult_t NetTable::connect(int dev, void* handle, void** send_comm,
                               NetDeviceHandle** dev_comm) {
  return std::visit(
      [&](auto t) {
        using T = TableOf<decltype(t)>;
        if constexpr (kHasContext<T>) {
          return t->connect(ctx_, dev, handle, send_comm, dev_comm);
        } else if constexpr (std::is_same_v<T, ncclNet_v10_t>) {
          return t->connect(dev, &comm_config_, handle, send_comm, dev_comm);
        } else if constexpr (kHasOffload<T>) {
          return t->connect(dev, handle, send_comm, dev_comm);
        } else {
          if (dev_comm != nullptr) {
            *dev_comm = nullptr;  // v6 has no offload handle
          }
          return t->connect(dev, handle, send_comm);
        }
      },
      table_);
}

ncclResult_t NetTable::accept(void* listen_comm, void** recv_comm, NetDeviceHandle** dev_comm) {
  return std::visit(
      [&](auto t) {
        if constexpr (kHasOffload<TableOf<decltype(t)>>) {
          return t->accept(listen_comm, recv_comm, dev_comm);
        } else {
          if (dev_comm != nullptr) {
            *dev_comm = nullptr;
          }
          return t->accept(listen_comm, recv_comm);
        }
      },
      table_);
}

ncclResult_t NetTable::close_send(void* comm) {
  return std::visit([&](auto t) { return t->closeSend(comm); }, table_);
}

ncclResult_t NetTable::close_recv(void* comm) {
  return std::visit([&](auto t) { return t->closeRecv(comm); }, table_);
}

ncclResult_t NetTable::close_listen(void* comm) {
  return std::visit([&](auto t) { return t->closeListen(comm); }, table_);
}

ncclResult_t NetTable::reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle) {
  return std::visit(
      [&](auto t) {
        // regMr's size is an int in v6 and v7, a size_t from v8: cast as such a caller would.
        using Size = ArgumentOf<2, decltype(TableOf<decltype(t)>::regMr)>;
        return t->regMr(comm, data, static_cast<Size>(size), type, mhandle);
      },
      table_);
}

ncclResult_t NetTable::reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type,
                                     std::uint64_t offset, int fd, void** mhandle) {
  return std::visit(
      [&](auto t) { return t->regMrDmaBuf(comm, data, size, type, offset, fd, mhandle); }, table_);
}

ncclResult_t NetTable::dereg_mr(void* comm, void* mhandle) {
  return std::visit([&](auto t) { return t->deregMr(comm, mhandle); }, table_);
}

ncclResult_t NetTable::isend(void* comm, void* data, std::size_t size, int tag, void* mhandle,
                             void* phandle, void** request) {
  return std::visit(
      [&](auto t) {
        using T = TableOf<decltype(t)>;
        if constexpr (kIntSizes<T>) {
          return t->isend(comm, data, static_cast<int>(size), tag, mhandle, request);
        } else if constexpr (kHasProfiler<T>) {
          return t->isend(comm, data, size, tag, mhandle, phandle, request);
        } else {
          return t->isend(comm, data, size, tag, mhandle, request);
        }
      },
      table_);
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
  return std::visit(
      [&](auto t) {
        using T = TableOf<decltype(t)>;
        if constexpr (kIntSizes<T>) {
          return t->irecv(comm, n, data, narrow.data(), tag_copy.data(), mhandles, request);
        } else if constexpr (kHasProfiler<T>) {
          return t->irecv(comm, n, data, wide.data(), tag_copy.data(), mhandles, ph, request);
        } else {
          return t->irecv(comm, n, data, wide.data(), tag_copy.data(), mhandles, request);
        }
      },
      table_);
}

ncclResult_t NetTable::iflush(void* comm, int n, void** data, const int* sizes, void** mhandles,
                              void** request) {
  std::array<int, NCCL_NET_MAX_REQUESTS> copy{};
  for (int i = 0; i < n && i < NCCL_NET_MAX_REQUESTS; ++i) {
    copy[static_cast<std::size_t>(i)] = sizes[i];
  }
  return std::visit(
      [&](auto t) { return t->iflush(comm, n, data, copy.data(), mhandles, request); }, table_);
}

ncclResult_t NetTable::test(void* request, int* done, int* sizes) {
  return std::visit([&](auto t) { return t->test(request, done, sizes); }, table_);
}

ncclResult_t NetTable::irecv_consumed(void* comm, int n, void* request) {
  return std::visit(
      [&](auto t) {
        if constexpr (kHasOffload<TableOf<decltype(t)>>) {
          return t->irecvConsumed(comm, n, request);
        } else {
          return ncclSuccess;  // v6 has no irecvConsumed; NCCL skips the call
        }
      },
      table_);
}

}  // namespace roce::tools
