// Drives libnccl-net-roce.so the way NCCL does, through the tools' one version-neutral table
// (tools/common/net_table.h), with what a test needs on top: results returned rather than
// thrown, NCCL's (void*)0x1 request hint pre-set and checked, and a logger that keeps the WARN
// and INFO lines. Test support only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl_net/nccl_net.h"
#include "net_table.h"

namespace roce::test {

using Api = tools::NetApi;
Api parse_api(const std::string& text);  // "v8".."v11"; throws on anything else
std::string api_name(Api api);

using Handle = std::array<char, NCCL_NET_HANDLE_MAXSIZE>;

struct Properties {
  std::string name;
  std::string pci_path;
  uint64_t guid = 0;
  int ptr_support = 0;
  int reg_is_global = 0;
  int force_flush = 0;
  int speed = 0;
  int port = 0;
  int max_comms = 0;
  int max_recvs = 0;
  int device_type = -1;
  int vdev_count = 0;
  size_t max_p2p_bytes = 0;
  size_t max_coll_bytes = 0;
  int rail_id = -1;  // v12
  int plane_id = -1;
};

class PluginDriver {
 public:
  // Throws std::runtime_error when the library or the table cannot be found.
  PluginDriver(const std::string& library_path, Api api);
  ~PluginDriver();
  PluginDriver(const PluginDriver&) = delete;
  PluginDriver& operator=(const PluginDriver&) = delete;

  Api api() const { return table_.api(); }

  // v11: init with a context carrying `traffic_class`; v10: the class is passed at connect;
  // v8/v9 ignore it.
  ncclResult_t init(int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF);
  // v11 only (no-op otherwise); also done by the destructor.
  ncclResult_t finalize();

  ncclResult_t devices(int* ndev);
  ncclResult_t properties(int dev, Properties* props);
  // Index of the device whose name is `name` (a test role, test_backend.h), or -1.
  int find_device(const std::string& name);
  ncclResult_t make_vdevice(int* d, const std::vector<int>& devs);

  ncclResult_t listen(int dev, Handle* handle, void** listen_comm);
  ncclResult_t connect(int dev, Handle* handle, void** send_comm);
  ncclResult_t accept(void* listen_comm, void** recv_comm);
  ncclResult_t close_send(void* comm);
  ncclResult_t close_recv(void* comm);
  ncclResult_t close_listen(void* comm);

  ncclResult_t reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t dereg_mr(void* comm, void* mhandle);

  // *request is pre-set to (void*)0x1 as NCCL does for LL protocols, so the plugin must
  // overwrite it; the call fails the test if it does not.
  ncclResult_t isend(void* comm, void* data, size_t size, int tag, void* mhandle, void** request);
  ncclResult_t irecv(void* comm, int n, void** data, const size_t* sizes, const int* tags,
                     void** mhandles, void** request);
  ncclResult_t iflush(void* comm, int n, void** data, const int* sizes, void** mhandles,
                      void** request);
  ncclResult_t test(void* request, int* done, int* sizes);
  ncclResult_t irecv_consumed(void* comm, int n, void* request);

 private:
  tools::NetTable table_;
};

// The plugin's path (ROCE_PLUGIN_PATH, set by CTest) and the API under test (ROCE_TEST_API).
std::string plugin_path_from_env();

// A logger in NCCL's style writing to stderr; counts WARN lines (for "one WARN" checks).
void test_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                 const char* fmt, ...);
int warn_count();
void reset_warn_count();
// The text of every WARN line so far (tests look for the facts a message must name).
std::vector<std::string> warn_lines();
// The text of every INFO line so far (emitted when NCCL_DEBUG=INFO).
std::vector<std::string> info_lines();
// True when one of `lines` contains every one of `needles`.
bool any_line_contains(const std::vector<std::string>& lines,
                       const std::vector<std::string>& needles);

}  // namespace roce::test
