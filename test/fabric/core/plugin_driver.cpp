// PluginDriver: see plugin_driver.h.
#include "plugin_driver.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace roce::test {
namespace {

std::mutex g_log_mutex;
int g_warns = 0;
std::vector<std::string> g_warn_lines;
std::vector<std::string> g_info_lines;

void* const kRequestHint = reinterpret_cast<void*>(0x1);

ncclResult_t check_overwritten(ncclResult_t result, void** request, const char* entry) {
  if (*request == kRequestHint) {
    std::fprintf(stderr, "test driver: %s left NCCL's (void*)0x1 hint in *request\n", entry);
    return ncclInternalError;
  }
  return result;
}

}  // namespace

Api parse_api(const std::string& text) {
  if (text == "v8")
    return Api::V8;
  if (text == "v9")
    return Api::V9;
  if (text == "v10")
    return Api::V10;
  if (text == "v11")
    return Api::V11;
  throw std::runtime_error("unknown ncclNet API '" + text + "' (expected v8, v9, v10 or v11)");
}

std::string api_name(Api api) {
  return "v" + std::to_string(static_cast<int>(api));
}

std::string plugin_path_from_env() {
  const char* path = std::getenv("ROCE_PLUGIN_PATH");
  if (path == nullptr || *path == '\0') {
    throw std::runtime_error("ROCE_PLUGIN_PATH is not set (CTest sets it to the built .so)");
  }
  return path;
}

__attribute__((format(printf, 5, 6))) void test_logger(ncclDebugLogLevel level, unsigned long flags,
                                                       const char* file, int line, const char* fmt,
                                                       ...) {
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(g_log_mutex);
  if (level == NCCL_LOG_WARN) {
    ++g_warns;
    g_warn_lines.emplace_back(text);
  } else if (level == NCCL_LOG_INFO) {
    g_info_lines.emplace_back(text);
  }
  const char* names[] = {"NONE", "VERSION", "WARN", "INFO", "ABORT", "TRACE"};
  const char* name = level >= 0 && level <= 5 ? names[level] : "?";
  std::fprintf(stderr, "[%d] NCCL %s %s:%d (0x%lx) %s\n", static_cast<int>(getpid()), name, file,
               line, flags, text);
}

int warn_count() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  return g_warns;
}

void reset_warn_count() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_warns = 0;
  g_warn_lines.clear();
}

std::vector<std::string> warn_lines() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  return g_warn_lines;
}

std::vector<std::string> info_lines() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  return g_info_lines;
}

PluginDriver::PluginDriver(const std::string& library_path, Api api) : api_(api) {
  int flags = RTLD_NOW | RTLD_LOCAL;
#if defined(__SANITIZE_ADDRESS__)
  // Under LeakSanitizer keep the image mapped at dlclose: the statically linked libstdc++'s
  // exception pool and the plugin's never-destroyed singletons would otherwise be reported as
  // leaks of an unmapped module. The ci build (no sanitizer) exercises the real unload.
  flags |= RTLD_NODELETE;
#endif
  library_ = dlopen(library_path.c_str(), flags);
  if (library_ == nullptr) {
    throw std::runtime_error("dlopen " + library_path + ": " + dlerror());
  }
  const std::string symbol = "ncclNetPlugin_" + api_name(api);
  void* table = dlsym(library_, symbol.c_str());
  if (table == nullptr) {
    dlclose(library_);
    throw std::runtime_error(library_path + " does not export " + symbol);
  }
  switch (api) {
    case Api::V8:
      v8_ = static_cast<const ncclNet_v8_t*>(table);
      break;
    case Api::V9:
      v9_ = static_cast<const ncclNet_v9_t*>(table);
      break;
    case Api::V10:
      v10_ = static_cast<const ncclNet_v10_t*>(table);
      break;
    case Api::V11:
      v11_ = static_cast<const ncclNet_v11_t*>(table);
      break;
  }
}

PluginDriver::~PluginDriver() {
  finalize();
  dlclose(library_);
}

// Calls the same-named member of whichever table is loaded (all four have it, same signature).
#define ROCE_DISPATCH(member, ...)    \
  (v8_    ? v8_->member(__VA_ARGS__)  \
   : v9_  ? v9_->member(__VA_ARGS__)  \
   : v10_ ? v10_->member(__VA_ARGS__) \
          : v11_->member(__VA_ARGS__))

ncclResult_t PluginDriver::init(int traffic_class) {
  traffic_class_ = traffic_class;
  if (v8_)
    return v8_->init(test_logger);
  if (v9_)
    return v9_->init(test_logger);
  if (v10_)
    return v10_->init(test_logger, nullptr);
  ncclNetCommConfig_v11_t config{traffic_class};
  return v11_->init(&ctx_, 0x5eed, &config, test_logger, nullptr);
}

ncclResult_t PluginDriver::finalize() {
  if (v11_ == nullptr || ctx_ == nullptr) {
    return ncclSuccess;
  }
  ncclResult_t result = v11_->finalize(ctx_);
  ctx_ = nullptr;
  return result;
}

ncclResult_t PluginDriver::devices(int* ndev) {
  return ROCE_DISPATCH(devices, ndev);
}

ncclResult_t PluginDriver::properties(int dev, Properties* out) {
  auto fill_common = [&](const auto& p) {
    out->name = p.name != nullptr ? p.name : "";
    out->pci_path = p.pciPath != nullptr ? p.pciPath : "";
    out->guid = p.guid;
    out->ptr_support = p.ptrSupport;
    out->reg_is_global = p.regIsGlobal;
    out->speed = p.speed;
    out->port = p.port;
    out->max_comms = p.maxComms;
    out->max_recvs = p.maxRecvs;
    out->device_type = p.netDeviceType;
  };
  auto fill_v9 = [&](const auto& p) {
    fill_common(p);
    out->force_flush = p.forceFlush;
    out->vdev_count = p.vProps.ndevs;
    out->max_p2p_bytes = p.maxP2pBytes;
    out->max_coll_bytes = p.maxCollBytes;
  };
  ncclResult_t result;
  if (v8_) {
    ncclNetProperties_v8_t p{};
    result = v8_->getProperties(dev, &p);
    if (result == ncclSuccess)
      fill_common(p);
  } else if (v9_ || v10_) {
    ncclNetProperties_v9_t p{};
    result = v9_ ? v9_->getProperties(dev, &p) : v10_->getProperties(dev, &p);
    if (result == ncclSuccess)
      fill_v9(p);
  } else {
    ncclNetProperties_v11_t p{};
    result = v11_->getProperties(dev, &p);
    if (result == ncclSuccess)
      fill_v9(p);
  }
  return result;
}

int PluginDriver::find_device(const std::string& name) {
  int n = 0;
  if (devices(&n) != ncclSuccess) {
    return -1;
  }
  for (int d = 0; d < n; ++d) {
    Properties p;
    if (properties(d, &p) == ncclSuccess && p.name == name) {
      return d;
    }
  }
  return -1;
}

ncclResult_t PluginDriver::make_vdevice(int* d, const std::vector<int>& devs) {
  ncclNetVDeviceProps_v9_t props{};
  props.ndevs = static_cast<int>(devs.size());
  for (size_t i = 0; i < devs.size() && i < NCCL_NET_MAX_DEVS_PER_NIC; ++i) {
    props.devs[i] = devs[i];
  }
  if (v8_)
    return ncclInvalidUsage;  // v8 has no virtual devices
  if (v9_)
    return v9_->makeVDevice(d, &props);
  if (v10_)
    return v10_->makeVDevice(d, &props);
  return v11_->makeVDevice(d, &props);
}

ncclResult_t PluginDriver::listen(int dev, Handle* handle, void** listen_comm) {
  handle->fill(0);
  if (v8_) {
    return v8_->listen(dev, handle->data(), listen_comm);
  }
  if (v9_) {
    return v9_->listen(dev, handle->data(), listen_comm);
  }
  if (v10_) {
    return v10_->listen(dev, handle->data(), listen_comm);
  }
  return v11_->listen(ctx_, dev, handle->data(), listen_comm);
}

ncclResult_t PluginDriver::connect(int dev, Handle* handle, void** send_comm) {
  if (v8_)
    return v8_->connect(dev, handle->data(), send_comm, nullptr);
  if (v9_)
    return v9_->connect(dev, handle->data(), send_comm, nullptr);
  if (v10_) {
    ncclNetCommConfig_v10_t config{traffic_class_};
    return v10_->connect(dev, &config, handle->data(), send_comm, nullptr);
  }
  ncclNetDeviceHandle_v11_t* dev_comm = nullptr;
  return v11_->connect(ctx_, dev, handle->data(), send_comm, &dev_comm);
}

ncclResult_t PluginDriver::accept(void* listen_comm, void** recv_comm) {
  ncclNetDeviceHandle_v8_t* dev_comm = reinterpret_cast<ncclNetDeviceHandle_v8_t*>(0x1);
  ncclResult_t result = ROCE_DISPATCH(accept, listen_comm, recv_comm, &dev_comm);
  if (result == ncclSuccess && dev_comm != nullptr) {
    std::fprintf(stderr, "test driver: accept left *recvDevComm set\n");
    return ncclInternalError;
  }
  return result;
}

ncclResult_t PluginDriver::close_send(void* comm) {
  return ROCE_DISPATCH(closeSend, comm);
}
ncclResult_t PluginDriver::close_recv(void* comm) {
  return ROCE_DISPATCH(closeRecv, comm);
}
ncclResult_t PluginDriver::close_listen(void* comm) {
  return ROCE_DISPATCH(closeListen, comm);
}

ncclResult_t PluginDriver::reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return ROCE_DISPATCH(regMr, comm, data, size, type, mhandle);
}

ncclResult_t PluginDriver::dereg_mr(void* comm, void* mhandle) {
  return ROCE_DISPATCH(deregMr, comm, mhandle);
}

ncclResult_t PluginDriver::isend(void* comm, void* data, size_t size, int tag, void* mhandle,
                                 void** request) {
  *request = kRequestHint;
  ncclResult_t result;
  if (v8_) {
    result = v8_->isend(comm, data, static_cast<int>(size), tag, mhandle, request);
  } else if (v9_) {
    result = v9_->isend(comm, data, size, tag, mhandle, request);
  } else if (v10_) {
    result = v10_->isend(comm, data, size, tag, mhandle, nullptr, request);
  } else {
    result = v11_->isend(comm, data, size, tag, mhandle, nullptr, request);
  }
  return check_overwritten(result, request, "isend");
}

ncclResult_t PluginDriver::irecv(void* comm, int n, void** data, const size_t* sizes,
                                 const int* tags, void** mhandles, void** request) {
  *request = kRequestHint;
  std::array<size_t, 8> wide{};
  std::array<int, 8> narrow{};
  std::array<int, 8> tag_copy{};
  std::array<void*, 8> phandles{};
  for (int i = 0; i < n && i < 8; ++i) {
    wide[static_cast<size_t>(i)] = sizes[i];
    narrow[static_cast<size_t>(i)] = static_cast<int>(sizes[i]);
    tag_copy[static_cast<size_t>(i)] = tags[i];
  }
  ncclResult_t result;
  if (v8_) {
    result = v8_->irecv(comm, n, data, narrow.data(), tag_copy.data(), mhandles, request);
  } else if (v9_) {
    result = v9_->irecv(comm, n, data, wide.data(), tag_copy.data(), mhandles, request);
  } else if (v10_) {
    result = v10_->irecv(comm, n, data, wide.data(), tag_copy.data(), mhandles, phandles.data(),
                         request);
  } else {
    result = v11_->irecv(comm, n, data, wide.data(), tag_copy.data(), mhandles, phandles.data(),
                         request);
  }
  return check_overwritten(result, request, "irecv");
}

ncclResult_t PluginDriver::iflush(void* comm, int n, void** data, const int* sizes, void** mhandles,
                                  void** request) {
  *request = kRequestHint;
  std::array<int, 8> copy{};
  for (int i = 0; i < n && i < 8; ++i) {
    copy[static_cast<size_t>(i)] = sizes[i];
  }
  ncclResult_t result = ROCE_DISPATCH(iflush, comm, n, data, copy.data(), mhandles, request);
  return check_overwritten(result, request, "iflush");
}

ncclResult_t PluginDriver::test(void* request, int* done, int* sizes) {
  return ROCE_DISPATCH(test, request, done, sizes);
}

ncclResult_t PluginDriver::irecv_consumed(void* comm, int n, void* request) {
  return ROCE_DISPATCH(irecvConsumed, comm, n, request);
}

#undef ROCE_DISPATCH

}  // namespace roce::test
