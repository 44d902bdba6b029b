// The one version-neutral driver of a plugin's ncclNet_v6..v12 table, shared by roce-bench
// (tools/roce-bench/src/net_plugin.h: errors thrown, calls counted) and the fabric tests
// (test/fabric/core/plugin_driver.h: results returned, NCCL's hints checked). It loads the plugin
// as NCCL does (dlopen RTLD_NOW | RTLD_LOCAL, dlsym "ncclNetPlugin_vN"), and offers one set of
// calls whatever the version: v6's missing offload handles, int sizes up to v8, v10's
// traffic-class connect config and profiler handles, the per-communicator context of v11 and v12
// and v12's rail and plane are handled here, in one place.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "nccl_net/nccl_net.h"

namespace roce::tools {

enum class NetApi { V6 = 6, V7 = 7, V8 = 8, V9 = 9, V10 = 10, V11 = 11, V12 = 12 };
inline constexpr NetApi kNetApis[] = {NetApi::V6,  NetApi::V7,  NetApi::V8, NetApi::V9,
                                      NetApi::V10, NetApi::V11, NetApi::V12};
// "v6".."v12"; nullopt for anything else.
std::optional<NetApi> parse_net_api(const std::string& text);
std::string net_api_name(NetApi api);
const char* net_table_symbol(NetApi api);  // "ncclNetPlugin_v8" ...

// ncclNetProperties_vN in one shape; fields a version lacks keep these defaults.
struct NetProperties {
  std::string name;
  std::optional<std::string> pci_path;  // nullopt when the plugin gives NULL
  std::uint64_t guid = 0;
  int ptr_support = 0;
  int reg_is_global = 0;
  int force_flush = 0;  // v9+
  int speed_mbps = 0;
  int port = 0;
  float latency_us = 0;
  int max_comms = 0;
  int max_recvs = 0;
  int net_device_type = 0;
  int net_device_version = 0;
  int vdev_count = 0;                         // v9+
  std::size_t max_p2p_bytes = 0;              // v9+
  std::size_t max_coll_bytes = 0;             // v9+
  std::optional<int> max_multi_request_size;  // v11+
  int rail_id = NCCL_NET_ID_UNDEF;            // v12
  int plane_id = NCCL_NET_ID_UNDEF;           // v12
};

// "HOST|CUDA|DMABUF".
std::string ptr_support_text(int ptr_support);
const char* nccl_result_name(ncclResult_t result);

using NetHandle = std::array<char, NCCL_NET_HANDLE_MAXSIZE>;
using NetDeviceHandle = ncclNetDeviceHandle_v7_t;  // one layout for v7..v12 (v6 has none)

class NetTable {
 public:
  // Throws std::runtime_error naming the path and the cause when the library cannot be loaded,
  // does not export the table (naming the tables it does export), or lacks name or init.
  NetTable(const std::string& path, NetApi api);
  // finalize() (v11) when init succeeded and finalize was not called; then dlclose, as NCCL
  // unloads a plugin, so one that leaves threads in unloaded code shows up here.
  ~NetTable();
  NetTable(const NetTable&) = delete;
  NetTable& operator=(const NetTable&) = delete;

  NetApi api() const { return api_; }
  const std::string& path() const { return path_; }
  // The table's name as it is now (a plugin may change it in init).
  std::string name() const;
  // The members NCCL calls unconditionally after init that are NULL ("" when none is): a plugin
  // may fill its table inside init, so this is asked after init.
  std::string missing_members() const;
  bool has_reg_mr_dmabuf() const;
  bool has_iflush() const;

  // v10 keeps `traffic_class` for connect; v11 passes it and `comm_id` in its init config.
  ncclResult_t init(ncclDebugLogger_t logger, int traffic_class, std::uint64_t comm_id,
                    ncclProfilerCallback_t profiler);
  ncclResult_t finalize();  // v11 and v12 only (ncclSuccess otherwise)
  void* context() const { return ctx_; }

  ncclResult_t devices(int* ndev);
  ncclResult_t properties(int dev, NetProperties* out);
  // v9+ (up to 4 members, 8 from v12); v6..v8 have none: ncclInvalidUsage.
  ncclResult_t make_vdevice(int* d, const std::vector<int>& devs);

  ncclResult_t listen(int dev, void* handle, void** listen_comm);
  ncclResult_t connect(int dev, void* handle, void** send_comm, NetDeviceHandle** dev_comm);
  ncclResult_t accept(void* listen_comm, void** recv_comm, NetDeviceHandle** dev_comm);
  ncclResult_t close_send(void* comm);
  ncclResult_t close_recv(void* comm);
  ncclResult_t close_listen(void* comm);

  ncclResult_t reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle);
  ncclResult_t reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type,
                             std::uint64_t offset, int fd, void** mhandle);
  ncclResult_t dereg_mr(void* comm, void* mhandle);

  // v6..v8 take int sizes: a size is cast as such a caller would pass it (the caller-mistake tests
  // pass negative ones on purpose; roce-bench refuses sizes above INT_MAX before calling).
  // `phandle(s)` go to v10+ only (null: none).
  ncclResult_t isend(void* comm, void* data, std::size_t size, int tag, void* mhandle,
                     void* phandle, void** request);
  ncclResult_t irecv(void* comm, int n, void** data, const std::size_t* sizes, const int* tags,
                     void** mhandles, void** phandles, void** request);
  ncclResult_t iflush(void* comm, int n, void** data, const int* sizes, void** mhandles,
                      void** request);
  ncclResult_t test(void* request, int* done, int* sizes);
  ncclResult_t irecv_consumed(void* comm, int n, void* request);  // v6 has none: ncclSuccess

 private:
  using Table = std::variant<const ncclNet_v6_t*, const ncclNet_v7_t*, const ncclNet_v8_t*,
                             const ncclNet_v9_t*, const ncclNet_v10_t*, const ncclNet_v11_t*,
                             const ncclNet_v12_t*>;

  std::string path_;
  NetApi api_;
  void* library_ = nullptr;
  Table table_;
  bool initialized_ = false;
  void* ctx_ = nullptr;  // v11, v12
  ncclNetCommConfig_v10_t comm_config_{NCCL_NET_TRAFFIC_CLASS_UNDEF};
};

}  // namespace roce::tools
