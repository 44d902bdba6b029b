// PluginDriver: see plugin_driver.h.
#include "plugin_driver.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "test_backend.h"

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
  if (const auto api = tools::parse_net_api(text)) {
    return *api;
  }
  throw std::runtime_error("unknown ncclNet API '" + text + "' (expected v6 .. v12)");
}

std::string api_name(Api api) {
  return tools::net_api_name(api);
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

bool any_line_contains(const std::vector<std::string>& lines,
                       const std::vector<std::string>& needles) {
  for (const auto& line : lines) {
    bool all = true;
    for (const auto& n : needles) {
      all = all && line.find(n) != std::string::npos;
    }
    if (all) {
      return true;
    }
  }
  return false;
}

PluginDriver::PluginDriver(const std::string& library_path, Api api) : table_(library_path, api) {}

PluginDriver::~PluginDriver() = default;

ncclResult_t PluginDriver::init(int traffic_class) {
  return table_.init(test_logger, traffic_class, 0x5eed, nullptr);
}

ncclResult_t PluginDriver::finalize() {
  return table_.finalize();
}

ncclResult_t PluginDriver::devices(int* ndev) {
  return table_.devices(ndev);
}

ncclResult_t PluginDriver::properties(int dev, Properties* out) {
  tools::NetProperties p;
  const ncclResult_t result = table_.properties(dev, &p);
  if (result == ncclSuccess) {
    out->name = p.name;
    out->pci_path = p.pci_path.value_or("");
    out->guid = p.guid;
    out->ptr_support = p.ptr_support;
    out->reg_is_global = p.reg_is_global;
    out->force_flush = p.force_flush;
    out->speed = p.speed_mbps;
    out->port = p.port;
    out->max_comms = p.max_comms;
    out->max_recvs = p.max_recvs;
    out->device_type = p.net_device_type;
    out->vdev_count = p.vdev_count;
    out->max_p2p_bytes = p.max_p2p_bytes;
    out->max_coll_bytes = p.max_coll_bytes;
    out->rail_id = p.rail_id;
    out->plane_id = p.plane_id;
  }
  return result;
}

int PluginDriver::find_device(const std::string& name) {
  const std::string device = test_device_name(name);  // the operator's NIC under hw
  int n = 0;
  if (devices(&n) != ncclSuccess) {
    return -1;
  }
  for (int d = 0; d < n; ++d) {
    Properties p;
    if (properties(d, &p) == ncclSuccess && p.name == device) {
      return d;
    }
  }
  return -1;
}

ncclResult_t PluginDriver::make_vdevice(int* d, const std::vector<int>& devs) {
  return table_.make_vdevice(d, devs);
}

ncclResult_t PluginDriver::listen(int dev, Handle* handle, void** listen_comm) {
  handle->fill(0);
  return table_.listen(dev, handle->data(), listen_comm);
}

ncclResult_t PluginDriver::connect(int dev, Handle* handle, void** send_comm) {
  tools::NetDeviceHandle* dev_comm = nullptr;
  return table_.connect(dev, handle->data(), send_comm, &dev_comm);
}

ncclResult_t PluginDriver::accept(void* listen_comm, void** recv_comm) {
  auto* dev_comm = reinterpret_cast<tools::NetDeviceHandle*>(0x1);
  ncclResult_t result = table_.accept(listen_comm, recv_comm, &dev_comm);
  if (result == ncclSuccess && dev_comm != nullptr) {
    std::fprintf(stderr, "test driver: accept left *recvDevComm set\n");
    return ncclInternalError;
  }
  return result;
}

ncclResult_t PluginDriver::close_send(void* comm) {
  return table_.close_send(comm);
}
ncclResult_t PluginDriver::close_recv(void* comm) {
  return table_.close_recv(comm);
}
ncclResult_t PluginDriver::close_listen(void* comm) {
  return table_.close_listen(comm);
}

ncclResult_t PluginDriver::reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return table_.reg_mr(comm, data, size, type, mhandle);
}

ncclResult_t PluginDriver::dereg_mr(void* comm, void* mhandle) {
  return table_.dereg_mr(comm, mhandle);
}

ncclResult_t PluginDriver::isend(void* comm, void* data, size_t size, int tag, void* mhandle,
                                 void** request) {
  *request = kRequestHint;
  const ncclResult_t result = table_.isend(comm, data, size, tag, mhandle, nullptr, request);
  return check_overwritten(result, request, "isend");
}

ncclResult_t PluginDriver::irecv(void* comm, int n, void** data, const size_t* sizes,
                                 const int* tags, void** mhandles, void** request) {
  *request = kRequestHint;
  const ncclResult_t result = table_.irecv(comm, n, data, sizes, tags, mhandles, nullptr, request);
  return check_overwritten(result, request, "irecv");
}

ncclResult_t PluginDriver::iflush(void* comm, int n, void** data, const int* sizes, void** mhandles,
                                  void** request) {
  *request = kRequestHint;
  const ncclResult_t result = table_.iflush(comm, n, data, sizes, mhandles, request);
  return check_overwritten(result, request, "iflush");
}

ncclResult_t PluginDriver::test(void* request, int* done, int* sizes) {
  return table_.test(request, done, sizes);
}

ncclResult_t PluginDriver::irecv_consumed(void* comm, int n, void* request) {
  return table_.irecv_consumed(comm, n, request);
}

}  // namespace roce::test
